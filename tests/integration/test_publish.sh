#!/usr/bin/env bash
# Publishing only what changed, through the CLI and on PostgreSQL: ban sets
# replaced from feeds (adds, removals, a TTL that lapses; ranges, comments,
# IPv6; every kind of bad line named, nothing changed), the difference alone
# published and then equal to what a sync writes; and the random churn of
# tests/bpf/test_publish.c on a PostgreSQL cluster of the test's own (what
# was published change by change equals what publishing everything writes);
# bulk writes there past a batch, with another role's fc_keys on the path.
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/pg.sh
. tests/integration/pg.sh
dir=/tmp/fc-it-$tag # fc_finish removes it
trap 'pg_cleanup; fc_finish' EXIT
[ "$(id -u)" -eq 0 ] || skip_all "needs root (pinned maps)"
command -v jq >/dev/null || skip_all "jq not installed"
mkdir -p "$dir"

in_exact4() { bpftool map lookup pinned "$pin/fc_exact4" key $(tr . ' ' <<<"$1") >/dev/null 2>&1; }
# The kernel's prefix entries, as "a.b.c.d/len" lines.
pfx4() { bpftool -j map dump pinned "$pin/fc_pfx4" | jq -r '.[].formatted.key | "\(.a | map(tostring) | join("."))/\(.prefixlen)"'; }
in_pfx4() { pfx4 | grep -qx "$1"; }
not() { ! "$@"; }
both() { "$1" "$2" && "$1" "$3"; } # both CHECK A B
nothing_to_sync() { fc sync --json | jq -e '.added == 0 and .changed == 0 and .removed == 0 and .policies_changed == 0' >/dev/null; }
set_bans() { fc ban list --set "$1" --json | jq -r '.[].ban' | tr '\n' ' '; }

# ---- a feed: ranges, comments, IPv6 ----
cat >"$dir/feed1" <<'EOF'
# a block list, as FireHOL and Spamhaus write them
198.18.1.0/24 ; SBL123
198.18.2.7
198.18.3.5-198.18.3.12   # a range: four CIDRs

2001:db8:1::/48
2001:db8:2::1-2001:db8:2::4 ; IPv6 ranges too
EOF
out=$(fc ban import --set drop "$dir/feed1")
check "a feed makes a new set: $out" grep -q 'ban set drop (new): 10 bans .* (10 added, 0 removed, 0 kept)' <<<"$out"
check "... a range becomes the CIDRs covering it" \
	[ "$(set_bans drop)" = "198.18.1.0/24 198.18.2.7 198.18.3.5 198.18.3.6/31 198.18.3.8/30 198.18.3.12 2001:db8:1::/48 2001:db8:2::1 2001:db8:2::2/127 2001:db8:2::4 " ]
check "... and the kernel holds them" both in_exact4 198.18.2.7 198.18.3.12
check "... prefixes too" in_pfx4 198.18.3.8/30
check "... what a sync would write" nothing_to_sync

# ---- replaced: adds, removals, a TTL ----
cat >"$dir/feed2" <<'EOF'
198.18.1.0/24 ; SBL123
198.18.2.8
2001:db8:1::/48
EOF
# The checks below run while the set lives: a TTL long enough for a loaded machine, waited out.
out=$(fc ban import --set drop --ttl 8s --json "$dir/feed2" | jq -c .)
check "the set replaced by the difference: $out" jq_true '.added == 1 and .removed == 8 and .kept == 2 and .ttl == 8' <<<"$out"
not_exact4() { ! in_exact4 "$1"; }
check "... lifted what left" both not_exact4 198.18.2.7 198.18.3.12
check "... added what came" in_exact4 198.18.2.8
check "... and a sync has nothing to do" nothing_to_sync
fcq ban add 198.18.2.8
check "a ban by hand on a set's address" in_exact4 198.18.2.8
out=$(fc ban list --json | jq -c '[.[] | select(.ban == "198.18.2.8") | .set]')
check "... listed once for each source: $out" [ "$out" = '["null","drop"]' -o "$out" = '[null,"drop"]' ]
fcq ban del 198.18.2.8
check "lifting the ban by hand leaves the set's" in_exact4 198.18.2.8
out=$(fc ban del 198.18.2.8 2>&1)
check "... and lifting it again names the set: $out" grep -q 'not banned by hand; ban set drop holds it' <<<"$out"
# The set lapses at the whole second it names (a TTL rounds up, never ends
# early) and is purged once time() reaches it: wait for that, and a little.
lapse=$(fc ban sets --json | jq '.[] | select(.set == "drop") | .expires | fromdateiso8601')
lapse=$((${lapse:-0} * 1000000 + 100000))
left=$((lapse - ${EPOCHREALTIME/./}))
[ "$left" -le 0 ] || sleep "$((left / 1000000)).$(printf %06d $((left % 1000000)))"
fcq ban add 198.18.9.9 # any command purges: the set lapsed
check "a set lapses whole after its TTL" not in_exact4 198.18.2.8
check "... and is gone" [ "$(fc ban sets --json)" = "[]" ]
check "... lifted from the kernel" not in_pfx4 198.18.1.0/24
check "... and a sync has nothing to do" nothing_to_sync

# ---- bad lines: each named, nothing changed ----
fcq ban import --set keep "$dir/feed1"
before=$(fc ban list --json)
{ echo 198.18.7.1; printf '%s\n' 'x.y.z.w' '198.18.7.2 extra' '198.18.7.9-198.18.7.1' '198.18.7.0-2001:db8::1' \
	'198.18.7.1/24' '198.18.7.0/33' '0.0.0.0/0' '0.0.0.0-255.255.255.255' '198.18.7.1-'; } >"$dir/bad"
out=$(fc ban import --set keep "$dir/bad" 2>&1)
check "a feed with bad lines is refused, exit 1" [ $? = 1 ]
check "... an address that is none, named: FILE:LINE" grep -qF "$dir/bad:2: \"x.y.z.w\": not a valid IPv4 address" <<<"$out"
check "... something after the entry" grep -qF "$dir/bad:3: unexpected \"extra\" after \"198.18.7.2\"" <<<"$out"
check "... a range backwards" grep -qF "$dir/bad:4: \"198.18.7.9-198.18.7.1\": a range goes from the lower address to the higher" <<<"$out"
check "... a range across families" grep -qF "$dir/bad:5: \"198.18.7.0-2001:db8::1\": a range's ends must both be IPv4 or both IPv6" <<<"$out"
check "... host bits set" grep -qF "$dir/bad:6: \"198.18.7.1/24\": host bits set; did you mean 198.18.7.0/24?" <<<"$out"
check "... a length too long" grep -qF "$dir/bad:7: \"198.18.7.0/33\": prefix length \"33\": expected a number from 1 to 32" <<<"$out"
check "... /0" grep -qF "$dir/bad:8: \"0.0.0.0/0\": a /0 prefix would cover every IPv4 source; refused" <<<"$out"
check "... a range over everything" grep -qF "$dir/bad:9: a range over every IPv4 address would ban every source; refused" <<<"$out"
check "... a range without its end" grep -qF "$dir/bad:10: \"\": expected an address at each end of a range" <<<"$out"
check "... and the count: $(tail -1 <<<"$out")" grep -q 'ban import .*: 9 invalid lines; nothing imported' <<<"$out"
check "... nothing changed" [ "$(fc ban list --json)" = "$before" ]
check "... in the kernel either" nothing_to_sync
out=$(fc ban import --set 'no/slash' "$dir/feed1" 2>&1)
check "a set name that is none: usage error, exit 2" [ $? = 2 ]

# ---- progress on a terminal only; sets in stats, export and import ----
awk 'BEGIN { for (i = 0; i < 150000; i++) printf "10.%d.%d.%d\n", int(i / 65536), int(i / 256) % 256, i % 256 }' >"$dir/long"
out=$(fc ban import --set long "$dir/long" 2>&1)
check "a long feed piped says nothing but the result" [ "$out" = "ban set long (new): 150000 bans from $dir/long (150000 added, 0 removed, 0 kept)" ]
if command -v script >/dev/null; then
	out=$(script -qec "$FC_BIN --db '$db' --pin-dir '$pin' --shm '$shm' ban import --set long '$dir/long'" /dev/null)
	check "... and on a terminal how far it is" grep -q "reading $dir/long: 131072 lines" <<<"$out"
else
	skip_one "progress on a terminal: script (util-linux) not installed"
fi
fcq ban del --set long
out=$(fc ban import --set keep - <"$dir/feed2" 2>&1)
check "a feed from standard input" [ "$(wc -l <<<"$out")" = 1 ]
check "ban sets lists the set" jq_true '.[0].set == "keep" and .[0].bans == 3' <<<"$(fc ban sets --json)"
check "stats count drops by source" jq_true '.ban_sources[0].set == null and .ban_sources[1].set == "keep"' <<<"$(fc stats --json)"
check "... Prometheus too" grep -q '^freqctl_ban_dropped_packets_total{source="set",set="keep"} 0$' <<<"$(fc stats --prometheus)"
fc export >"$dir/export.json"
check "export carries the set" jq_true '.freqctl == 2 and .sets[0].name == "keep" and (.sets[0].bans | length) == 3' "$dir/export.json"
fcq ban del --set keep
check "ban del --set deletes it" [ "$(fc ban sets --json)" = "[]" ]
fcq import "$dir/export.json"
check "import brings it back" [ "$(set_bans keep)" = "198.18.1.0/24 198.18.2.8 2001:db8:1::/48 " ]
check "... and a sync has nothing to do" nothing_to_sync

# ---- a policy row whose ip columns a script left wrong ----
# bit24 N: fc_top4's exact bit for 198.18.N.0/24 (entry 198 << 8 | 18, little-endian key).
bit24() { bpftool -j map lookup pinned "$pin/fc_top4" key 18 198 0 0 | jq -e ".formatted.value.in24[$1] / 32 | floor % 2 == 1" >/dev/null; }
if command -v sqlite3 >/dev/null; then
	fcq ban add 198.18.50.9
	fcq policy add 777 --match ip=198.18.50.7 --rate 10/s
	sqlite3 "$db" "UPDATE policies SET ip_family = NULL, ip_addr = NULL, ip_len = NULL WHERE id = 777"
	fcq sync
	fcq ban del 198.18.50.9
	check "a sync puts right a policy's ip columns a script cleared: its /24 keeps its exact bit" bit24 50
	check "... over the policy's entry" in_exact4 198.18.50.7
	fcq policy del 777
	check "... cleared with the last address" not bit24 50
	# A ban a script wrote with a TEXT address (SQLite keeps the type it is
	# given): the range queries never see it, so it must never be published.
	fcq ban add 198.18.60.5
	sqlite3 "$db" "INSERT INTO bans (family, addr, len, created) VALUES (4, CAST(X'C6123C06' AS TEXT), 32, 0)"
	out=$(fc ban add 198.18.60.7 2>&1)
	check "a ban row with a TEXT address: a command refuses it, exit 1" [ $? = 1 ]
	check "... naming the row: $(tail -1 <<<"$out")" grep -q 'corrupt ban row' <<<"$out"
	check "... the command's ban not stored" [ "$(sqlite3 "$db" "SELECT count(*) FROM bans WHERE addr = X'C6123C07'")" = 0 ]
	check "... the kernel as it was" both not_exact4 198.18.60.6 198.18.60.7
	check "... its /24's bit kept over the ban there" bit24 60
	sqlite3 "$db" "DELETE FROM bans WHERE typeof(addr) <> 'blob'"
	fcq ban del 198.18.60.5
	check "the row gone, commands work again" not bit24 60
else
	skip_one "a policy's ip columns written by a script: sqlite3 not installed"
	skip_one "... over the policy's entry: sqlite3 not installed"
	skip_one "... cleared with the last address: sqlite3 not installed"
	for c in "a ban row with a TEXT address refused" "... naming the row" "... the command's ban not stored" \
		"... the kernel as it was" "... its /24's bit kept" "the row gone, commands work again"; do
		skip_one "$c: sqlite3 not installed"
	done
fi

# ---- the random churn, on PostgreSQL ----
why=$(pg_missing)
[ -z "$why" ] || skip_all "$why"
check "a PostgreSQL cluster of the test's own starts" pg_start "$dir/pg" || { cat "$dir/pg/initdb.log" "$dir/pg/log" 2>/dev/null; exit 1; }
pg_sql postgres "CREATE DATABASE fcchurn"
CMOCKA_MESSAGE_OUTPUT=TAP FC_CHURN_OPS=${FC_CHURN_OPS:-2000} \
	FC_TEST= FC_TEST_PG_DSN="postgresql:///fcchurn?host=$pg_dir/sock&port=$pg_port&user=postgres" build/tests/test_publish >"$dir/churn.log" 2>&1
sed 's/^/# /' "$dir/churn.log"
check "PostgreSQL: what was published change by change equals publishing everything" \
	sh -c "grep -q '^ok 1 - test_churn' '$dir/churn.log' && ! grep -q '^not ok' '$dir/churn.log'"

# ---- bulk writes on PostgreSQL ----
# A feed is written 65,536 keys to a statement: past a batch, and beside a
# fc_keys(text) that another role put on the search path (the statements
# read their keys by a subquery of their own, and call no function by that
# name). Then a sync has nothing to do.
pg_sql freqctl "CREATE FUNCTION public.fc_keys(t text) RETURNS TABLE (family smallint, addr bytea, len smallint)
	LANGUAGE sql AS \$\$ SELECT 4::smallint, '\\x0a000001'::bytea, 32::smallint \$\$"
db=$pg_dsn
awk 'BEGIN { for (i = 0; i < 70000; i++) printf "198.%d.%d.%d\n", 18 + int(i / 65536), int(i / 256) % 256, i % 256; print "2001:db8:70::/48" }' >"$dir/feed70k"
out=$(fc ban import --set big "$dir/feed70k" 2>&1)
check "PostgreSQL: a feed of 70,001 past a batch, another fc_keys on the path: $out" \
	grep -q 'ban set big (new): 70001 bans .* (70001 added, 0 removed, 0 kept)' <<<"$out"
check "... the set is the file" [ "$(fc ban list --set big --json | jq 'length')" = 70001 ]
sed -i '1,5000d' "$dir/feed70k"
out=$(fc ban import --set big "$dir/feed70k" 2>&1)
check "... 5,000 lifted: $out" grep -q '(0 added, 5000 removed, 65001 kept)' <<<"$out"
check "... the kernel as the store says, nothing for a sync" nothing_to_sync
check "... the decoy was never called" not in_exact4 10.0.0.1
