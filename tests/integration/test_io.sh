#!/usr/bin/env bash
# freqctl export and import: an exact round trip through a second store,
# import replacing what the store held, and a rejected file changing nothing.
. "$(dirname "$0")/lib.sh"
dir=/tmp/fc-it-$tag
trap 'rm -rf "/sys/fs/bpf/fc-io-$tag" "/sys/fs/bpf/fc-io2-$tag"; fc_finish' EXIT
[ "$(id -u)" -eq 0 ] || skip_all "needs root (publishing to pinned maps)"
mkdir -p "$dir"
a() { "$FC_BIN" --db "$dir/a.db" --pin-dir "/sys/fs/bpf/fc-io-$tag" --shm "$dir/a.shm" "$@"; }
b() { "$FC_BIN" --db "$dir/b.db" --pin-dir "/sys/fs/bpf/fc-io2-$tag" --shm "$dir/b.shm" "$@"; }

a policy add 7 --match 'uid=u1024,arg:api=login' --rate 3/m --rate 100/d >/dev/null
a policy add 8 --match 'ip=*' --rate 5/s --burst 9 --new-sources 100 --count syn >/dev/null
a policy add 9 --match 'header:X-Key=k,ip=198.18.0.0/24' --rate 5/s --action delay --delay-burst 4 >/dev/null
a policy add 10 --match 'ip=2001:db8::/32' --rate 1000000/m --algo window --count bytes --action log >/dev/null
a policy add 12 --match 'uid=*,uri=/dl/*' --concurrency 4 >/dev/null
a policy add 13 --match 'uri=/api/*' --rate 10/s --concurrency 50 >/dev/null
a ban add 198.18.0.0/15 >/dev/null
a ban add 2001:db8::1 --ttl 1h >/dev/null
a ban add uid=evil --ttl 2d >/dev/null
a node set edge-1 0.25 >/dev/null
a node set edge-2 0.75 >/dev/null
a allow add 198.18.0.7 --note 'partner, by hand' >/dev/null
a allow add uid=vip --ttl 1h >/dev/null
a export >"$dir/a.json"
check "export is JSON with 6 policies and 3 bans" \
	[ "$(jq -r '"\(.policies | length),\(.bans | length)"' "$dir/a.json")" = "6,3" ]
check "... a concurrency cap alone: no rates, the cap" \
	jq_true '[.policies[] | select(.id >= 12) | [.rates, .concurrency]] == [[[], 4], [["10/s"], 50]]' "$dir/a.json"
b policy add 99 --match uid=gone --rate 1/s >/dev/null
b ban add 203.0.113.9 >/dev/null
b allow add 203.0.113.10 >/dev/null
check "export has the allow entries, note and expiry" \
	jq_true '[.allows[] | [.allow, .note, (.expires != null)]] == [["198.18.0.7", "partner, by hand", false], ["uid=vip", null, true]]' "$dir/a.json"
check "import into another store" b import "$dir/a.json"
b export >"$dir/b.json"
check "round trip is exact" cmp -s "$dir/a.json" "$dir/b.json"
check "import replaced the store's own policy" sh -c "! grep -q gone '$dir/b.json'"
check "import replaced the store's own ban" sh -c "! grep -q 203.0.113.9 '$dir/b.json'"
check "... and allow entry" sh -c "! grep -q 203.0.113.10 '$dir/b.json'"
check "re-import of the same file is exact too" sh -c "'$FC_BIN' --db '$dir/a.db' --pin-dir /sys/fs/bpf/fc-io-$tag --shm '$dir/a.shm' import '$dir/a.json' >/dev/null"
a export >"$dir/a2.json"
check "store unchanged by its own export" cmp -s "$dir/a.json" "$dir/a2.json"
jq '.policies[1].rates[0] = "5/x"' "$dir/a.json" >"$dir/bad.json"
check "a bad file is refused (exit 1)" sh -c "! '$FC_BIN' --db '$dir/b.db' --pin-dir /sys/fs/bpf/fc-io2-$tag --shm '$dir/b.shm' import '$dir/bad.json' 2>'$dir/err'"
check "the refusal says where and what" grep -q 'policies\[1\] (id 8): rate "5/x": unit must be one of s, m, h, d' "$dir/err"
b export >"$dir/b2.json"
check "nothing changed" cmp -s "$dir/b.json" "$dir/b2.json"

# import --dry-run: what would change, and nothing changes.
jq '.policies[0].rates = ["4/m"] | .policies += [{"id": 11, "match": "uid=*", "rates": ["100/m"]}]
	| del(.bans[0]) | .nodes[0].weight = 0.5 | .allows[0].note = "partner" | .allows += [{"allow": "2001:db8::/48"}]' \
	"$dir/a.json" >"$dir/next.json"
b import --dry-run "$dir/next.json" >"$dir/dry"
out=$(cat "$dir/dry")
check "--dry-run: a policy added, one changed" sh -c "grep -qxF '+ policy 11 uid=*' '$dir/dry' && grep -qx '~ policy 7 uid=u1024,arg:api=login' '$dir/dry'"
check "... a ban removed, a node changed" sh -c "grep -qx -- '- ban 198.18.0.0/15' '$dir/dry' && grep -qx '~ node edge-1' '$dir/dry'"
check "... and the summary" grep -q '^policy: 1 added, 1 changed, 0 removed; ban: 0 added, 0 changed, 1 removed; uid-ban: 0 added, 0 changed, 0 removed; set: 0 added, 0 changed, 0 removed; node: 0 added, 1 changed, 0 removed; allow: 1 added, 1 changed, 0 removed (dry run: nothing changed)$' <<<"$out"
check "... as JSON" jq_true '.policy.added == ["11 uid=*"] and .ban.removed == ["198.18.0.0/15"]' <<<"$(b import --dry-run --json "$dir/next.json")"
b export >"$dir/b3.json"
check "... and the store is as it was" cmp -s "$dir/b.json" "$dir/b3.json"
jq 'del(.allows)' "$dir/a.json" >"$dir/old.json"
check "a file from before allow lists imports" b import "$dir/old.json"
check "... and leaves the allow entries alone" jq_true '.allows | length == 2' <<<"$(b export)"
jq '.allows[0].allow = "198.18.0.7/8"' "$dir/a.json" >"$dir/badallow.json"
check "a bad allow entry is refused" sh -c "! '$FC_BIN' --db '$dir/b.db' --pin-dir /sys/fs/bpf/fc-io2-$tag --shm '$dir/b.shm' import '$dir/badallow.json' 2>'$dir/err'"
check "... saying where" grep -q 'allows\[0\]: "198.18.0.7/8": host bits set' "$dir/err"
# A file of 200,000 allow entries, two of them given twice, is refused in
# seconds (entries compared pair by pair took minutes), naming both.
jq '.allows = ([range(200000) | {allow: "10.\(. / 65536 | floor).\(. / 256 | floor % 256).\(. % 256)"}]
	+ [{allow: "10.0.1.2"}, {allow: "uid=vip"}, {allow: "uid=vip"}])' "$dir/a.json" >"$dir/twice.json"
check "200,000 allow entries, two given twice: refused within 20 s" sh -c "timeout 20 '$FC_BIN' --db '$dir/b.db' \
	--pin-dir /sys/fs/bpf/fc-io2-$tag --shm '$dir/b.shm' import --dry-run '$dir/twice.json' 2>'$dir/err'; [ \$? -eq 1 ]"
check "... naming each at its second place" sh -c "grep -q 'allows\[200000\]: 10.0.1.2 given twice' '$dir/err' &&
	grep -q 'allows\[200002\]: uid=vip given twice' '$dir/err' && grep -q '2 errors; nothing imported' '$dir/err'"
# 65,536 policies, an id and a match given twice: refused in seconds (pairs
# compared one by one took many minutes), naming each at its second place.
jq '.policies = ([range(65536) | {id: (. + 1), match: "uid=u\(.)", rates: ["1/s"]}]
	+ [{id: 7, match: "uid=x", rates: ["1/s"]}, {id: 70000, match: "uid=u9", rates: ["1/s"]}])' \
	"$dir/a.json" >"$dir/pols.json"
check "65,536 policies, an id and a match given twice: refused within 20 s" sh -c "timeout 20 '$FC_BIN' --db '$dir/b.db' \
	--pin-dir /sys/fs/bpf/fc-io2-$tag --shm '$dir/b.shm' import --dry-run '$dir/pols.json' 2>'$dir/err'; [ \$? -eq 1 ]"
check "... naming each" sh -c "grep -q 'policies\[65536\] (id 7): id 7 given twice' '$dir/err' &&
	grep -q \"policies\[65537\] (id 70000): uid=u9 is policy 10's match too\" '$dir/err'"
# A dry run of 200,000 bans against a store of 200,000: keys matched by
# sorting, in seconds (pair by pair: hours).
jq '.bans = [range(200000) | {ban: "10.\(. / 65536 | floor).\(. / 256 | floor % 256).\(. % 256)"}]' \
	"$dir/a.json" >"$dir/bans1.json"
jq '.bans = [range(1; 200001) | {ban: "10.\(. / 65536 | floor).\(. / 256 | floor % 256).\(. % 256)"}]' \
	"$dir/a.json" >"$dir/bans2.json"
b import "$dir/bans1.json" >/dev/null
check "a dry run of 200,000 bans against 200,000: within 30 s" sh -c "timeout 30 '$FC_BIN' --db '$dir/b.db' \
	--pin-dir /sys/fs/bpf/fc-io2-$tag --shm '$dir/b.shm' import --dry-run --json '$dir/bans2.json' >'$dir/dry2'"
check "... one added, one removed" jq_true '.ban.added == ["10.3.13.64"] and .ban.removed == ["10.0.0.0"]' <"$dir/dry2"
exit 0
