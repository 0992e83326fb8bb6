#!/usr/bin/env bash
# Everything a policy does, done per key by a DIM=* policy in a real nginx:
# --burst and per-tier bursts, tiers, --algo window and sliding, --action log
# (the would-deny counts of each key in freqctl keys), nginx's own dry run,
# --action delay (only the key over its rate waits), Retry-After and the
# RateLimit headers from the refused key's own bucket, and $freqctl_key in
# the access log. (--escalate per key: test_escalation.sh, which has the
# namespace and XDP it needs.) Real nginx serving files, stopped by its pid
# on exit.
# tests/run.sh: alone: delays and Retry-After measured in wall time.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag
mkdir -p "$d/html/dry"
: >"$d/html/dry/index.html"

fcq policy add 1 --match 'uid=*' --rate 1/h --burst 4
FC_NGX_ACCESS_LOG="log_format fc '\$status \$freqctl_status \$freqctl_policy \$freqctl_key'; access_log $d/logs/access.log fc;" \
	FC_NGX_SERVER="location /dry/ { freqctl_dry_run on; }" \
	fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"
: >"$d/html/index.html"

# The headers of one request to PATH: "RETRY-AFTER R T" (- where absent),
# from Retry-After and RateLimit's r= and t=.
limits() { # limits PATH [curl args]
	local path=$1
	shift
	curl -s -o /dev/null -D - "$@" "$ngx_url$path" | tr -d '\r' | awk -F': ' '
		tolower($1) == "retry-after" { ra = $2 }
		tolower($1) == "ratelimit" { n = split($2, f, ";"); for (i = 1; i <= n; i++) { if (f[i] ~ /^r=/) r = substr(f[i], 3); if (f[i] ~ /^t=/) t = substr(f[i], 3) } }
		END { print (ra == "" ? "-" : ra), (r == "" ? "-" : r), (t == "" ? "-" : t) }'
}
# The passed and denied counts of the key of KEYS (a JSON array of freqctl
# keys) that has PASSED passes, as "passed/denied" ("-" if none has).
key_counts() { # key_counts KEYS-JSON PASSED
	jq -r --argjson p "$2" '[.[] | select(.passed == $p)] | if length == 1 then "\(.[0].passed)/\(.[0].denied)" else "-" end' <<<"$1"
}

# --burst: every key its own B back to back from idle.
check "uid=* 1/h --burst 4: u1 four back to back, then refused" [ "$(codes 5 '/?uid=u1')" = "200 200 200 200 429" ]
check "... u2 four of its own" [ "$(codes 5 '/?uid=u2')" = "200 200 200 200 429" ]
fcq policy del 1
fcq policy add 2 --match 'uid=*' --rate 60/m:5 --rate 100/h:3
check "--rate 60/m:5 --rate 100/h:3: u1 three (the second tier's own burst)" [ "$(codes 4 '/?uid=u1')" = "200 200 200 429" ]
check "... u2 three of its own" [ "$(codes 4 '/?uid=u2')" = "200 200 200 429" ]
fcq policy del 2
fcq policy add 3 --match 'header:X-Api-Key=*' --rate 1/h:2 --rate 100/h
check "header:X-Api-Key=* --rate 1/h:2 --rate 100/h: key K1 two" [ "$(codes 3 / -H 'X-Api-Key: K1')" = "200 200 429" ]
check "... key K2 two of its own" [ "$(codes 3 / -H 'X-Api-Key: K2')" = "200 200 429" ]
fcq policy del 3

# Tiers per key, and the headers of a refusal from the refused key's bucket.
# 30/m:3 rather than 3/m: the first tier refills in 6 s, not a minute.
fcq policy add 4 --match 'uid=*' --rate 30/m:3 --rate 5/h
check "--rate 30/m:3 --rate 5/h: u1 three, then refused by the first tier" [ "$(codes 3 '/?uid=u1')" = "200 200 200" ]
read -r ra r t <<<"$(limits '/?uid=u1')"
check "... its refusal: Retry-After 1 or 2 s, RateLimit r=0 and t the same ($ra $r $t)" \
	[ "$ra" -ge 1 ] && [ "$ra" -le 2 ] && [ "$r/$t" = "0/$ra" ]
check "... u2 three of its own" [ "$(codes 4 '/?uid=u2')" = "200 200 200 429" ]
sleep 6.2
check "... the first tier full again: u1 two more" [ "$(codes 2 '/?uid=u1')" = "200 200" ]
read -r ra r t <<<"$(limits '/?uid=u1')"
check "... then refused by the hour's five: Retry-After $ra s (700 to 720), the first tier has one left (r=$r)" \
	[ "$ra" -ge 700 ] && [ "$ra" -le 720 ] && [ "$r/$t" = "1/$ra" ]
check "... u3, new: three of its own" [ "$(codes 3 '/?uid=u3')" = "200 200 200" ]
read -r ra r t <<<"$(limits '/?uid=u3')"
check "... its refusal from its own bucket, not u1's: Retry-After 1 or 2 s, r=0 ($ra $r $t)" \
	[ "$ra" -ge 1 ] && [ "$ra" -le 2 ] && [ "$r/$t" = "0/$ra" ]
check "... u2 two more, then its hour's five are spent too" [ "$(codes 3 '/?uid=u2')" = "200 200 429" ]
check "... a passing u4's line in the access log names no policy and its key" \
	sh -c "curl -s -o /dev/null '$ngx_url/?uid=u4' && grep -q '^200 PASSED - u4$' '$d/logs/access.log'"
check "... u2's last refusal: policy 4, key u2" [ "$(grep '^429 ' "$d/logs/access.log" | tail -n 1)" = "429 REJECTED 4 u2" ]
fcq policy del 4

# Fixed and sliding windows per key (aligned to UTC minutes: away from an edge).
fcq policy add 5 --match 'uid=*' --algo window --rate 3/m
away_from_minute_edge 10
check "--algo window 3/m: u1 three in the minute" [ "$(codes 4 '/?uid=u1')" = "200 200 200 429" ]
check "... u2 three of its own" [ "$(codes 4 '/?uid=u2')" = "200 200 200 429" ]
fcq policy del 5
fcq policy add 6 --match 'uid=*' --algo sliding --rate 3/m
away_from_minute_edge 10
check "--algo sliding 3/m: u1 three" [ "$(codes 4 '/?uid=u1')" = "200 200 200 429" ]
check "... u2 three of its own" [ "$(codes 4 '/?uid=u2')" = "200 200 200 429" ]
fcq policy del 6

# --action log (a policy's dry run): every request passes; each key counts
# what it would have denied.
fcq policy add 7 --match 'uid=*' --rate 2/h --action log
mark=$(wc -l <"$d/logs/access.log")
check "--action log 2/h: u1 four, all pass" [ "$(codes 4 '/?uid=u1')" = "200 200 200 200" ]
check "... u2 one" [ "$(codes 1 '/?uid=u2')" = "200" ]
keys=$(fc keys 7 --json)
check "freqctl keys 7: u1 2 passed, 2 would-be denials ($(key_counts "$keys" 2))" [ "$(key_counts "$keys" 2)" = 2/2 ]
check "... u2 1 passed, none ($(key_counts "$keys" 1))" [ "$(key_counts "$keys" 1)" = 1/0 ]
check "... stats: 3 passed, 2 would_drop" \
	jq_true '.policies[] | select(.id == 7) | .passed.packets == 3 and .would_drop.packets == 2 and .keys == 2' <<<"$(fc stats --json)"
check "... the error log says so, twice for u1" \
	[ "$(grep -c '1 log policy would have denied this request, uid "u1"' "$d/logs/error.log")" = 2 ]
check "... the access log names u1, the key of the log policy, on each of its four" \
	[ "$(tail -n +$((mark + 1)) "$d/logs/access.log" | grep -c '^200 PASSED - u1$')" = 4 ]
check "... u2's next two: one more pass, then a would-be denial of its own" [ "$(codes 2 '/?uid=u2')" = "200 200" ]
check "... freqctl keys 7: u1 2/2 and u2 2/1" \
	jq_true '[.[] | "\(.passed)/\(.denied)"] | sort == ["2/1", "2/2"]' <<<"$(fc keys 7 --json)"
fcq policy del 7

# nginx's dry run (freqctl_dry_run on) of an enforcing per-key policy.
fcq policy add 8 --match 'uid=*' --rate 1/h
check "freqctl_dry_run on, uid=* 1/h: u1 three, all pass" [ "$(codes 3 '/dry/?uid=u1')" = "200 200 200" ]
check "... the access log: REJECTED_DRY_RUN by policy 8 for key u1, twice" \
	[ "$(grep -c '^200 REJECTED_DRY_RUN 8 u1$' "$d/logs/access.log")" = 2 ]
check "... outside the dry run location u1 is spent, u2 is not" \
	[ "$(codes 1 '/?uid=u1') $(codes 1 '/?uid=u2')" = "429 200" ]
fcq policy del 8

# --action delay: only the key past its burst waits.
fcq policy add 9 --match 'uid=*' --rate 60/m --burst 2 --action delay --delay-burst 2
{ for _ in 1 2 3 4 5; do echo u1; done; echo u2; echo u2; } |
	xargs -P 7 -I{} curl -s -o /dev/null --max-time 10 -w '{} %{http_code} %{time_total}\n' "$ngx_url/?uid={}&n=$RANDOM{}" >"$d/delay"
u1=$(awk '$1 == "u1" { if ($2 == 429) r++; else if ($3 < 0.5) f++; else s++ } END { printf "%d/%d/%d", f, s, r }' "$d/delay")
u2=$(awk '$1 == "u2" { if ($2 == 429) r++; else if ($3 < 0.5) f++; else s++ } END { printf "%d/%d/%d", f, s, r }' "$d/delay")
longest=$(awk '$1 == "u1" && $2 == 200 { if ($3 > m) m = $3 } END { print int(m + 0.5) }' "$d/delay")
check "--action delay 60/m burst 2, delay-burst 2, 5 of u1 at once: 2 at once, 2 delayed, 1 refused (got $u1)" [ "$u1" = 2/2/1 ]
check "... the last delayed about 2 s (got $longest s)" [ "$longest" -ge 2 -a "$longest" -le 3 ]
check "... 2 of u2 meanwhile: both at once, none delayed (got $u2)" [ "$u2" = 2/0/0 ]
check "... stats: 4 passed, 2 of them delayed, 1 denied" \
	jq_true '.policies[] | select(.id == 9) | .passed.packets == 4 and .delayed == 2 and .dropped.packets == 1' <<<"$(fc stats --json)"
check "... the access log: DELAYED by policy 9 for key u1, twice" \
	[ "$(grep -c '^200 DELAYED 9 u1$' "$d/logs/access.log")" = 2 ]
fcq policy del 9

# $freqctl_key of a key of two wildcard dimensions.
fcq policy add 10 --match 'uid=*,header:X-Api-Key=*' --rate 1/h
check "uid=*,header:X-Api-Key=* 1/h: (u5, K5) once" [ "$(codes 2 '/?uid=u5' -H 'X-Api-Key: K5')" = "200 429" ]
check "... (u5, K6) is another key" [ "$(codes 1 '/?uid=u5' -H 'X-Api-Key: K6')" = "200" ]
check "... \$freqctl_key: the values joined by a comma" \
	sh -c "grep -q '^200 PASSED - u5,K5$' '$d/logs/access.log' && grep -q '^429 REJECTED 10 u5,K5$' '$d/logs/access.log'"
fcq policy del 10
check "no worker crashed" sh -c "! grep -q 'exited on signal' '$d/logs/error.log'"
exit 0
