#!/usr/bin/env bash
# Per-key policies in nginx (DIM=*): a bucket per uid, header value, client
# address; combined with fixed values and uri prefixes; exact under 16-way
# concurrency across 2 workers; kept across nginx -s reload, and across
# policy edits what each key used (rescaled to the new rate);
# a flood of new keys leaves a steady key's bucket alone; $freqctl_key logs
# the deciding key. Real nginx serving files, stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag
mkdir -p "$d/html/api"
echo ok >"$d/html/api/x"
echo ok >"$d/html/apix"
echo ok >"$d/html/login"

fcq policy add 1 --match 'uid=*' --rate 3/h
FC_NGX_WORKERS=2 FC_NGX_ACCESS_LOG="log_format fc '\$status \$freqctl_policy \$freqctl_key'; access_log $d/logs/access.log fc;" \
	FC_NGX_HTTP="set_real_ip_from 127.0.0.1; real_ip_header X-Real-IP;" fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"
: >"$d/html/index.html" # empty: curl with many URLs prints their statuses alone

check "uid=* 3/h: u1 three, then refused" [ "$(codes 4 '/?uid=u1')" = "200 200 200 429" ]
check "... u2 three of its own" [ "$(codes 4 '/?uid=u2')" = "200 200 200 429" ]
check "... a request without a uid is not touched" [ "$(codes 4 '/')" = "200 200 200 200" ]
check "\$freqctl_key names the refused key" grep -q '^429 1 u1$' "$d/logs/access.log"

# 1,000 uids, 5 requests each, 16 at a time across the 2 workers.
for i in $(seq 0 999); do for _ in 1 2 3 4 5; do echo "$ngx_url/?uid=k$i"; done; done | shuf >"$d/urls"
xargs -P 16 -n 50 curl -s -o /dev/null -w '%{http_code}\n' --max-time 10 <"$d/urls" >"$d/many"
check "1,000 uids x 5, 16-way: exactly 3,000 pass ($(grep -c '^200$' "$d/many") of $(grep -cE '^[0-9]{3}$' "$d/many"))" \
	[ "$(grep -c '^200$' "$d/many")" = 3000 ]
check "... every one of them three times" \
	[ "$(for i in 0 500 999; do codes 1 "/?uid=k$i"; done | tr '\n' ' ')" = "429 429 429 " ]

fc_nginx_reload
check "keys survive nginx -s reload" [ "$(codes 1 '/?uid=u1')" = 429 ]
fcq policy set 1 --match 'uid=*' --rate 4/h
check "... and a change of the limits: u1's 3 used are 3 of 4/h, one more (afresh it would have 4)" \
	[ "$(codes 2 '/?uid=u1')" = "200 429" ]
check "... while a new uid has the new four" [ "$(codes 5 '/?uid=u3')" = "200 200 200 200 429" ]
stats=$(fc stats --json)
check "stats: the policy's passed and denied add up (3 + 3 + 3,000 + 1 + 4; 1 + 1 + 2,000 + 3 + 1 + 1 + 1)" \
	jq_true '.policies[] | select(.id == 1) | .passed.packets == 3011 and .dropped.packets == 2008' <<<"$stats"
check "... its keys: u1, u2, u3 and the 1,000; none overflowed" \
	jq_true '.policies[] | select(.id == 1) | .keys == 1003 and .overflowed == 0' <<<"$stats"
check "freqctl keys 1: 1,003 keys, u1 the busiest (4 passed, 3 denied)" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' keys 1 -n 1 | grep -q '^policy 1: 1003 keys' &&
		'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' keys 1 -n 1 --json | jq -e '.[0].passed == 4 and .[0].denied == 3' >/dev/null"
fcq policy del 1

fcq policy add 2 --match 'uid=*,arg:api=login' --rate 2/m
check "uid=*,arg:api=login 2/m: per uid, on login only" [ "$(codes 3 '/?uid=u7&api=login')" = "200 200 429" ]
check "... other APIs of the same uid are left alone" [ "$(codes 3 '/?uid=u7&api=other')" = "200 200 200" ]
check "... another uid logs in" [ "$(codes 1 '/?uid=u8&api=login')" = 200 ]
top=$(timeout 20 "$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" top -n 1 -d 0.1 --json)
busiest=$("$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" keys 2 -n 1 --json)
check "freqctl top: the busiest keys, u7 at its limit first (2 passed, 1 denied), then u8 at half" \
	jq_true --argjson k "$busiest" '.keys | length == 2 and .[0].key == $k[0].key and .[0].used >= 0.9 and
		.[0].passed == 2 and .[0].denied == 1 and .[1].used > 0.4 and .[1].used <= 0.5 and .[1].passed == 1' <<<"$top"
fcq policy del 2

fcq policy add 3 --match 'header:X-Api-Key=*' --rate 2/m
check "header:X-Api-Key=* 2/m: per key value" [ "$(codes 3 / -H 'X-Api-Key: K1')" = "200 200 429" ]
check "... the header's name in any case is the same header" [ "$(codes 1 / -H 'x-api-key: K1')" = 429 ]
check "... its value's case is another key" [ "$(codes 1 / -H 'X-Api-Key: k1')" = 200 ]
fcq policy del 3

fcq policy add 4 --match 'uid=u9,uri=/api/*' --rate 2/m
check "uri=/api/* matches /api/x" [ "$(codes 3 '/api/x?uid=u9')" = "200 200 429" ]
check "... and not /apix" [ "$(codes 3 '/apix?uid=u9')" = "200 200 200" ]
fcq policy del 4

fcq policy add 5 --match 'ip=*,uri=/login' --rate 3/m
got=$(curl -s -o /dev/null -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} %{num_connects}\n' \
	"$ngx_url/login" "$ngx_url/login" "$ngx_url/login" "$ngx_url/login" | tr '\n' ' ')
check "ip=*,uri=/login 3/m in nginx: per client address, requests on one connection ($got)" \
	[ "$got" = "200 1 200 0 200 0 429 0 " ]
check "... \$freqctl_key is the address" grep -q '^429 5 127.0.0.1$' "$d/logs/access.log"
fcq policy del 5

fcq policy add 7 --match 'ip=*' --layer http --rate 2/m
got=$(curl -s -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' "$ngx_url/" "$ngx_url/" "$ngx_url/")
check "--layer http, ip=* 2/m: requests per client address in nginx, on one connection ($got)" \
	[ "$got" = "200 200 429 " ]
check "... and not at XDP: the kernel's ip=* slot stays empty" \
	jq_true '.policies[] | select(.id == 7) | .layer == "nginx" and .passed.packets == 2' <<<"$(fc stats --json)"
got=$(curl -s -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' -H 'X-Real-IP: 198.51.100.7' \
	"$ngx_url/" "$ngx_url/" "$ngx_url/")
check "... keyed on the address the realip module makes it (X-Real-IP from a trusted proxy): 2 of its own ($got)" \
	[ "$got" = "200 200 429 " ]
check "--layer xdp with an nginx dimension: a usage error naming it" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' policy add 8 --match 'uid=*' --layer xdp --rate 1/s 2>&1 >/dev/null |
		grep -q 'layer xdp: the match has uid, which only nginx sees'"
fcq policy del 7

# A flood of new keys does not take a steady key's bucket.
fcq policy add 6 --match 'uid=*' --rate 5/h
check "a steady uid, 2 of its 5" [ "$(codes 2 '/?uid=steady')" = "200 200" ]
n=${FC_FLOOD:-200000}
t0=$(date +%s)
seq "$n" | awk -v u="$ngx_url" '{print u "/?uid=f" $1 "-" int(rand() * 1e9)}' |
	xargs -P 8 -n 500 curl -s -o /dev/null -w '%{http_code}\n' --max-time 10 >"$d/flood"
check "$n random uids in $(($(date +%s) - t0)) s, all answered ($(grep -c '^200$' "$d/flood") passed; past the new-key cap, the overflow bucket)" \
	[ "$(grep -cE '^(200|429)$' "$d/flood")" = "$n" ]
check "... and the steady uid still has exactly 3 left" [ "$(codes 4 '/?uid=steady')" = "200 200 200 429" ]
check "... stats: keys held and requests overflowed, as Prometheus sees them" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --prometheus | grep -q '^freqctl_policy_keys{policy=\"6\",match=\"uid=\*\"} [0-9]'"

# --shm-keys: the key table's size; a publish without it keeps the table.
size0=$(stat -c %s "$shm.state")
fcq --shm-keys 2000 sync
size1=$(stat -c %s "$shm.state")
check "--shm-keys 2000: a table of 2048 entries (64 bytes each) made anew" \
	[ $((size0 - size1)) = $(((1048576 - 2048) * 64)) ]
sleep 1.2 # each worker looks at the shm's files once a second
check "... nginx maps it: the steady uid starts afresh, 5 of 5" [ "$(codes 6 '/?uid=steady')" = "200 200 200 200 200 429" ]
fcq sync
check "... a publish without it keeps the table and its keys" \
	test "$(stat -c %s "$shm.state")" = "$size1" -a "$(codes 1 '/?uid=steady')" = 429
check "... --shm-keys 100: a usage error naming the bounds" \
	sh -c "'$FC_BIN' --shm-keys 100 --db '$db' sync 2>&1 | grep -q 'from 1024 to 16777216'"
check "no worker crashed" sh -c "! grep -q 'exited on signal' '$d/logs/error.log'"
exit 0
