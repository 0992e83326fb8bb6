#!/usr/bin/env bash
# The policy commands keep what the operator did not say (issue 28, item 4):
# policy set refuses to move a policy to another layer unless --layer is
# given, policy edit changes only what it is given (--no-X clears X), ip=*
# may be at XDP/TC and in nginx side by side, and the refusals and hints say
# what is true. Publishes to a pin dir and shm of its own; no traffic.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (publishing to pinned maps)"
[ -x "$FC_BIN" ] || skip_all "$FC_BIN not built (make)"
command -v jq >/dev/null || skip_all "jq not installed (Debian jq)"
dir=/tmp/fc-it-$tag
mkdir -p "$dir"

# out COMMAND...: runs fc, its stdout and stderr in $dir/out, its status kept.
out() { fc "$@" >"$dir/out" 2>&1; }
# Policy ID's key KEY as export writes it.
pol() { fc export | jq -c ".policies[] | select(.id == $1) | .$2"; }
has() { grep -qF -- "$1" "$dir/out"; }

# --- policy set keeps the layer; policy edit keeps what it is not given ---
check "an ip=* request limit in nginx" fcq policy add 2 --match 'ip=*' --rate 20/s --layer http
out policy set 2 --match 'ip=*' --rate 20/s
check "policy set without --layer does not move it to XDP/TC (exit 1)" [ $? = 1 ]
check "... and says why and what to do" has "freqctl: policy 2: runs in nginx (requests), and without --layer this one would run at XDP/TC (packets): give --layer http to keep it there or --layer xdp to move it, or change only what you give with 'freqctl policy edit 2'"
check "... the policy is still nginx's" [ "$(pol 2 layer)" = '"http"' ]
check "policy set with --layer http replaces it" fcq policy set 2 --match 'ip=*' --rate 30/s --layer http --max-keys 100
check "policy edit changes the rate alone" fcq policy edit 2 --rate 10/s --burst 40
check "... the layer, key cap and match stay" \
	jq_true '.policies[] | select(.id == 2) | .layer == "http" and .max_keys == 100 and .match == "ip=*" and .rates == ["10/s"] and .burst == 40' <(fc export)
check "policy edit --no-burst --no-max-keys clears them" fcq policy edit 2 --no-burst --no-max-keys
check "... back to their defaults" jq_true '.policies[] | select(.id == 2) | .burst == null and .max_keys == null and .rates == ["10/s"]' <(fc export)
out policy edit 2 --algo window --burst 3
check "policy edit checks the result as policy add does (exit 2)" [ $? = 2 ]
check "... naming the policy" has "freqctl: policy 2: a burst (--burst, N/UNIT:B) applies to --algo gcra; --algo window admits N per window"
out policy edit 2 --burst 3 --no-burst
check "an option and its --no- together: a usage error" sh -c "[ $? = 2 ] && grep -qF -- '--burst and --no-burst: give one' '$dir/out'"
out policy edit 2
check "nothing to change: a usage error" sh -c "[ $? = 2 ] && grep -qF 'nothing to change' '$dir/out'"
out policy edit 9 --rate 1/s
check "policy edit of no such policy: exit 1" sh -c "[ $? = 1 ] && grep -qF 'policy 9: no such policy' '$dir/out'"
check "policy edit --escalate and --ban-ttl, then --no-escalate clears both" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' policy edit 2 --escalate 5/m --ban-ttl 1h >/dev/null &&
		'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' policy edit 2 --no-escalate >/dev/null"
check "... none left" jq_true '.policies[] | select(.id == 2) | .escalate == null and .ban_ttl == null' <(fc export)

# --- ip=* at XDP/TC and in nginx, side by side ---
check "ip=* at XDP/TC beside policy 2's ip=* in nginx" fcq policy add 3 --match 'ip=*' --rate 100/s --count syn
out sync
check "... both published: one policy at XDP/TC, one in nginx" \
	sh -c "grep -q ' 1 policies (entries' '$dir/out' && grep -q '^nginx shm .*: 1 policies' '$dir/out'"
check "... the kernel's ip=* is policy 3" jq_true '.policies[] | select(.id == 3) | .layer == null and .count == "syn"' <(fc export)
out policy add 4 --match 'ip=*' --rate 1/s
check "a second ip=* at XDP/TC is refused, naming the one there" \
	has "freqctl: policy 4: ip=* is already limited at XDP/TC by policy 3 (one policy per match at each layer; --layer http puts one in nginx beside it)"
out policy add 4 --match 'ip=*' --rate 1/s --layer http
check "... and a second in nginx" \
	has "freqctl: policy 4: ip=* is already limited in nginx by policy 2 (one policy per match at each layer; without --layer http, an ip= policy runs at XDP/TC)"
check "policy del of the nginx one leaves the kernel's" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' policy del 2 >/dev/null &&
	'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' sync | grep -q ' 1 policies (entries'"
check "... and the nginx one can come back beside it" fcq policy add 2 --match 'ip=*' --rate 20/s --layer http

# --- one bucket for every source: --force, and a warning where it is published ---
out policy add 5 --match ip=0.0.0.0/0 --rate 20/s
check "a new ip=0.0.0.0/0 without --force is refused (exit 2)" [ $? = 2 ]
check "... saying what it would do" has "freqctl: policy 5: ip=0.0.0.0/0 puts every IPv4 source in one bucket: 20/s for all of them together, SSH and every other service included; a bucket per source is --match 'ip=*'; give --force if one shared bucket is what you want"
check "... and not stored" [ "$(pol 5 id)" = "" ]
check "with --force it is taken" fcq policy add 5 --match ip=0.0.0.0/0 --rate 20/s --force
check "a stored one is edited without --force" fcq policy edit 5 --rate 30/s
out policy edit 5 --match ip=::/0
check "... but not made another /0 without it" sh -c "[ $? = 2 ] && grep -qF 'ip=::/0 puts every IPv6 source in one bucket' '$dir/out'"
out sync
check "sync publishes it, with a warning" has "freqctl: sync: warning: policy 5: ip=0.0.0.0/0 puts every IPv4 source in one bucket: 30/s for all of them together"
check "status says so" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' status | grep -qF 'warning: policy 5: ip=0.0.0.0/0 puts every IPv4 source in one bucket'"
check "... and status --json" jq_true '.warnings | length == 1 and (.[0] | startswith("policy 5: ip=0.0.0.0/0"))' <(fc status --json)
fc export >"$dir/zero.json"
fcq policy del 5
out import "$dir/zero.json"
check "an export holding one imports, with the warning" has "freqctl: import: warning: policy 5: ip=0.0.0.0/0"

# --- --action delay with a window: refused as new, a stored one loads, said ---
out policy add 6 --match uid=d --rate 3/m --algo window --action delay --delay-burst 3
check "--action delay --algo window is refused (exit 2), naming what delays" \
	sh -c "[ $? = 2 ] && grep -qF -- '--action delay waits requests to a GCRA rate (--algo gcra, the default); --algo window never delays' '$dir/out'"
jq '.policies += [{"id": 6, "match": "uid=d", "rates": ["3/m"], "algo": "window", "action": "delay", "delay_burst": 3}]' \
	"$dir/zero.json" >"$dir/delay.json"
out import "$dir/delay.json"
check "an older export holding one imports, with a warning" \
	has "freqctl: import: warning: policy 6: --action delay with --algo window never delays: what is over its window is denied (--algo gcra delays)"
check "... and it is published" jq_true '.policies[] | select(.id == 6) | .action == "delay" and .algo == "window"' <(fc export)
out sync
check "sync says so too" has "freqctl: sync: warning: policy 6: --action delay with --algo window never delays"
check "policy edit puts it right: --algo gcra" fcq policy edit 6 --algo gcra

# --- nginx's rate spelling ---
out policy add 7 --match 'uid=*' --rate 5r/m --rate 100r/d
check "--rate 5r/m, as limit_req writes it, is 5/m" has "policy 7 added: uid=* 5/m,100/d"
check "... and stored as freqctl writes it" [ "$(pol 7 rates)" = '["5/m","100/d"]' ]

# --- without root: read what can be read, say what the rest needs ---
if ! id nobody >/dev/null 2>&1; then
	skip_one "no user nobody to run freqctl without root"
else
	chmod 755 "$dir"
	# as_nobody OUT COMMAND...: freqctl as nobody, on the suite's store, pin dir and shm.
	as_nobody() { runuser -u nobody -- "$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" "$@" >"$dir/out" 2>&1; }
	as_nobody policy list
	check "policy list without root, on a store it can read" sh -c "[ $? = 0 ] && grep -q '^3 ' '$dir/out'"
	runuser -u nobody -- "$FC_BIN" --db "$dir/none/store.db" policy list --json >"$dir/out" 2>&1
	check "... a store that is not there: refused, naming it, and not made" \
		sh -c "[ $? = 1 ] && grep -q '^freqctl: policy list: no store at $dir/none/store.db: no such file' '$dir/out' && [ ! -e '$dir/none' ]"
	mkdir -p "$dir/closed"
	chmod 0750 "$dir/closed"
	cp "$db" "$dir/closed/store.db"
	runuser -u nobody -- "$FC_BIN" --db "$dir/closed/store.db" ban list >"$dir/out" 2>&1
	check "... a store in a directory closed to it (the default's is 0750, root's): refused, naming the directory, its mode and owner" \
		sh -c "[ $? = 1 ] && grep -qxF \"freqctl: ban list: store $dir/closed/store.db: its directory $dir/closed (mode 0750, owner root) is closed to this user: reading the store there needs root (freqctl keeps it closed: the store holds the fleet's key)\" '$dir/out'"
	for c in attach detach; do
		as_nobody "$c" lo
		check "$c without root: exit 1, saying what it needs first" \
			grep -qx "freqctl: $c: needs root (or CAP_BPF and CAP_NET_ADMIN): it .*" "$dir/out"
	done
	as_nobody stats
	check "stats without root says so" grep -qx "freqctl: stats: needs root (or CAP_BPF and CAP_NET_ADMIN): it reads the pinned BPF maps" "$dir/out"
	as_nobody status
	check "status without root: what it can read (the store's warnings), and what the rest needs" \
		sh -c "grep -q '^freqctl: status: needs root (or CAP_BPF and CAP_NET_ADMIN)' '$dir/out' && grep -q '^warning: policy 5: ip=0.0.0.0/0' '$dir/out'"
	as_nobody policy add 8 --match uid=n --rate 1/s
	check "a change without root says what it needs first" \
		grep -q "^freqctl: policy 8: needs root (or CAP_BPF and CAP_NET_ADMIN): " "$dir/out"
	check "--help without root" quiet runuser -u nobody -- "$FC_BIN" policy add --help
fi

# --- a --db with a typo is not an empty store ---
typo=$dir/sotre.db
for c in "policy list" "ban list" "ban sets" "allow list" "node list" export stats "keys 3" sync "ban del 198.18.0.1" "policy del 3"; do
	# shellcheck disable=SC2086 # a command of two words is two arguments
	"$FC_BIN" --db "$typo" --pin-dir "$pin" --shm "$shm" $c >"$dir/out" 2>"$dir/err"
	check "$c on a store that is not there: exit 1, naming the path" \
		sh -c "[ $? = 1 ] && grep -qE '^freqctl: (${c% *}|$c|policy 3|ban del 198.18.0.1): no store at $typo: no such file' '$dir/err'"
	check "... and makes none, and prints nothing on stdout" sh -c "[ ! -e '$typo' ] && [ ! -s '$dir/out' ]"
done
check "... with where its path is from, and what makes one" grep -qxF \
	"freqctl: policy list: no store at $typo: no such file (the path is from option --db; attach, ban add or import, allow add, policy add or set, import or node set makes one)" \
	<("$FC_BIN" --db "$typo" policy list 2>&1)
check "... from the environment, it says so" grep -qF "no store at $typo: no such file (the path is from environment FREQCTL_DB;" \
	<(FREQCTL_DB=$typo "$FC_BIN" policy list 2>&1)
printf 'FREQCTL_DB=%s\n' "$typo" >"$dir/typo.conf"
check "... from a configuration file, naming the file and line" grep -qF "no store at $typo: no such file (the path is from $dir/typo.conf:1;" \
	<(FREQCTL_CONFIG=$dir/typo.conf "$FC_BIN" policy list 2>&1)
if [ ! -e /var/lib/freqctl/freqctl.db ]; then
	check "... from the default, what sets another" grep -qF "no store at /var/lib/freqctl/freqctl.db: no such file (the default path: --db, FREQCTL_DB or /etc/default/freqctl set another;" \
		<(env -u FREQCTL_DB "$FC_BIN" policy list 2>&1)
fi
check "... where a command opens the store itself, what says more" grep -qF "no store at $typo: no such file ('freqctl status' says where the path is from)" \
	<("$FC_BIN" --db "$typo" --pin-dir "$pin" stats 2>&1)
check "... its --help still answers" quiet "$FC_BIN" --db "$typo" policy list --help
check "... and a usage error is still one (exit 2)" sh -c "'$FC_BIN' --db '$typo' ban del nonsense 2>/dev/null; [ \$? = 2 ]"
check "status shows it, exit 0" sh -c "'$FC_BIN' --db '$typo' --pin-dir '$pin' --shm '$shm' status | grep -qxF 'store: $typo: no store there yet (attach, ban add or import, allow add, policy add or set, import or node set makes one)'"
"$FC_BIN" --db "$typo" --pin-dir "$pin" --shm "$shm" policy add 1 --match uid=typo --rate 1/s >"$dir/out" 2>"$dir/err"
check "a first use makes it, and says so" sh -c "[ $? = 0 ] && [ -e '$typo' ] && grep -qxF 'freqctl: made a new store at $typo' '$dir/err'"
"$FC_BIN" --db "$typo" --pin-dir "$pin" --shm "$shm" policy add 2 --match uid=typo2 --rate 1/s >"$dir/out" 2>"$dir/err"
check "... once" sh -c "! grep -q 'made a new store' '$dir/err'"
fcq sync # the suite's own store back in the pin dir and shm

# --- what the small refusals and hints say ---
out keys 3
check "keys on the ip=* policy at XDP/TC: its buckets are per source unit, and where to look" \
	has "freqctl: keys: policy 3: its buckets are one per IPv4 address and IPv6 /64, at XDP/TC, not in nginx's key table: 'freqctl top' ranks its busiest sources"
out keys 5
check "keys on a policy of one bucket: says so" has "freqctl: keys: policy 5: one bucket for all it matches, no keys"
out policy add 9 --match 'uid=*' --rate 1/s
check "a second uid=*: names the first, no word of ip=* layers" \
	sh -c "grep -qF \"freqctl: policy 9: uid=* is already limited by policy 7 (one policy per match: change that one with 'freqctl policy edit 7')\" '$dir/out' && ! grep -qF 'ip=*' '$dir/out'"

# --- policy list shows the layer ---
list=$(fc policy list)
check "policy list has a UNIT and a LAYER column" grep -qE '^ID +MATCH +UNIT +LAYER +RATES ' <<<"$list"
check "... an ip=* in nginx: its match as stats shows it, its unit spelled out apart, and nginx" \
	grep -qE '^2 +ip=\* +/32,/64 +nginx ' <<<"$list"
check "... the one at XDP/TC xdp" grep -qE '^3 +ip=\* +/32,/64 +xdp ' <<<"$list"
check "... a policy of no ip=* has no unit" grep -qE '^7 +uid=\* +- +nginx ' <<<"$list"
check "... the match the same as stats --json's" \
	[ "$(awk '$1 == 3 { print $2 }' <<<"$list")" = "$(fc stats --json | jq -r '.policies[] | select(.id == 3) | .match')" ]
check "... and --json has it" jq_true '[.[] | select(.id == 2 or .id == 3) | .layer] == ["nginx", "xdp"]' <(fc policy list --json)

# --- --fleet: the rate is the whole fleet's; what it refuses, and why ---
out policy add 11 --match 'header:x-tenant=*' --rate 100/d --algo window --fleet
check "policy add --fleet: the whole fleet's rate, said" has "policy 11 added: header:x-tenant=* 100/d (window, drop, the whole fleet's, requests in nginx)"
check "... export and policy list --json say fleet: true" \
	sh -c "[ \"\$('$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' export | jq '.policies[] | select(.id == 11) | .fleet')\" = true ] &&
		[ \"\$('$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' policy list --json | jq '.[] | select(.id == 11) | .fleet')\" = true ]"
list=$(fc policy list)
check "... policy list has a FLEET column" grep -qE '^ID .* OVERRIDE +FLEET +WARMUP ' <<<"$list"
check "... yes for it" grep -qE '^11 .* yes +- +-$' <<<"$list"
check "... - for the others" grep -qE '^7 .* - +- +- +-$' <<<"$list"
for refused in "--concurrency 3|--concurrency is refused with --fleet: places in flight are not leasable credit" \
	"--rate 5/m|--fleet takes one --rate, and this policy has 2: the entry holds one tier" \
	"--warmup 1m|--warmup is refused with --fleet: a ramp is per node" \
	"--action delay|--action delay is refused with --fleet: shaping would spend credit that a node had lent out"; do
	out policy add 12 --match 'uid=*,uri=/x' --rate 10/s --fleet ${refused%%|*}
	check "--fleet ${refused%%|*}: refused (exit 2), saying why" sh -c "[ $? = 2 ] && grep -qF -- 'freqctl: policy 12: ${refused#*|}' '$dir/out'"
done
out policy add 12 --match 'ip=*/24' --rate 10/s --fleet
check "ip=* --fleet at XDP/TC: refused (exit 2), saying why and what to do" \
	sh -c "[ $? = 2 ] && grep -qxF 'freqctl: policy 12: ip=* --fleet is refused at XDP/TC (per-source buckets are evicted by the kernel and sources can be spoofed; use --layer http to enforce it per address in nginx)' '$dir/out'"
check "... and nothing was stored" [ "$(pol 12 id)" = "" ]
check "ip=ADDR --fleet at XDP/TC is taken" fcq policy add 12 --match ip=198.18.0.9 --rate 60/m --algo window --fleet
# The kernel's slot: the fleet's algorithm and flag, the fleet's 60 (not a
# weight's share), and this node's shares (none: it is in no node set).
kpol() { bpftool -j map dump pinned "$pin/fc_policies" | jq -c ".[] | .formatted.value | select(.id == $1)"; }
check "... published to the kernel as the fleet's: FC_ALGO_FLEET_WINDOW, FC_POLICY_FLEET, 60 unscaled, no share" \
	jq_true '.algo == 3 and .flags == 4 and .[""].lim.tier[0].limit == 60 and .fleet_share == [0, 0]' <(kpol 12)
check "policy edit --no-fleet: each node's share again" fcq policy edit 11 --no-fleet
check "... fleet: false, the rest kept" jq_true '.policies[] | select(.id == 11) | .fleet == false and .rates == ["100/d"] and .algo == "window"' <(fc export)
out policy edit 11 --rate 5/m --rate 100/d
check "... a second rate is fine for it then" [ $? = 0 ]
out policy edit 11 --fleet
check "policy edit --fleet checks the result: two rates refused (exit 2)" sh -c "[ $? = 2 ] && grep -qF -- '--fleet takes one --rate' '$dir/out'"
check "policy edit --fleet --rate 100/d" fcq policy edit 11 --fleet --rate 100/d
fc export >"$dir/fleet.json"
fcq policy del 11
fcq policy del 12
out import "$dir/fleet.json"
check "import brings --fleet back" jq_true '[.policies[] | select(.id == 11 or .id == 12) | .fleet] == [true, true]' <(fc export)

# --- no more argument or header names than nginx reads ---
# nginx's index keeps 32 argument names and 32 header names: a policy past
# them would be stored, listed and not enforced.
for i in $(seq 1 32); do fcq policy add $((300 + i)) --match "arg:a$i=*" --rate 1000/s; done
out policy add 299 --match 'arg:zz=*' --rate 1000/s
check "a 33rd argument name: refused, exit 1, saying why" sh -c "[ $? = 1 ] && grep -qF \
	'freqctl: policy 299: arg:zz: one argument name more than nginx reads (32 across its policies; it would leave this one out)' '$dir/out'"
check "... and not stored" jq_true 'all(.[]; .id != 299)' <<<"$(fc policy list --json)"
check "a name in use (A1 is a1 to nginx): accepted" fcq policy add 298 --match 'arg:A1=x,uid=*' --rate 5/s
check "header names count apart" fcq policy add 297 --match 'header:X-Zz=*' --rate 5/s
check "replacing a policy frees its name" fcq policy set 332 --match 'arg:zz=*' --rate 1000/s
fc export >"$dir/names.json"
jq '.policies += [.policies[] | select(.id == 331) | .id = 296 | .match = "arg:yy=*"]' "$dir/names.json" >"$dir/names33.json"
out import "$dir/names33.json"
check "import of a file with 33 argument names: refused, naming the policy" sh -c "[ $? = 1 ] && grep -qF \
	'(id 296): arg:yy: one argument name more than nginx reads' '$dir/out'"
