#!/usr/bin/env bash
# Allow entries in a real nginx serving files: an allowed address and an
# allowed uid pass under a ban, an ip=* and a uid=* limit (per-key policies)
# and a --concurrency cap (taking no place), are logged as ALLOWED and
# counted (freqctl stats: nginx allowed); deleting the entry restores the
# ban and the limits. nginx is stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag
mkdir -p "$d/html/slow"
head -c 32768 /dev/zero | tr '\0' s >"$d/html/slow/f"

FC_NGX_WORKERS=2 \
FC_NGX_ACCESS_LOG="log_format fc '\$status \$freqctl_status \$arg_uid'; access_log $d/logs/access.log fc;" \
FC_NGX_SERVER="location /slow/ { limit_rate 16k; }" \
	fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"
nginx_allowed() { fc stats --json | jq .nginx_allowed; }
# After the start, whose own requests would spend the budget.
fcq policy add 1 --match 'ip=*' --rate 1/m --burst 1 --layer http
fcq policy add 2 --match 'uid=*' --rate 1/m --burst 1

got=$(codes 3 "/?uid=a")
check "ip=* 1/m, burst 1: one of three ($got)" [ "$got" = "200 429 429" ]
check "ban add 127.0.0.1" fcq ban add 127.0.0.1
check "banned: 403" [ "$(codes 1 '/?uid=b')" = 403 ]
check "allow add 127.0.0.1" fcq allow add 127.0.0.1 --note loopback
before=$(nginx_allowed)
got=$(codes 5 "/?uid=a")
check "the allowed address passes the ban, ip=* and uid=* ($got)" [ "$got" = "200 200 200 200 200" ]
check "... counted: nginx allowed grew by 5" [ $(($(nginx_allowed) - before)) = 5 ]
check "... logged as ALLOWED" [ "$(grep -c '^200 ALLOWED a$' "$d/logs/access.log")" = 5 ]
check "... and charged no policy" jq_true '[.policies[] | .passed.packets] == [1, 1]' <<<"$(fc stats --json)"
check "stats text shows it" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats | grep -Eq '^nginx: allowed +[0-9]+'"
check "prometheus too" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --prometheus | grep -Eq '^freqctl_nginx_allowed_total [1-9]'"

# A cap of one place: the allowed address takes none.
fcq policy add 3 --match uid=s --concurrency 1
got=$( (for _ in 1 2 3; do curl -s -o /dev/null -w '%{http_code}\n' --max-time 10 "$ngx_url/slow/f?uid=s" & done; wait) | sort | tr '\n' ' ')
check "--concurrency 1, three slow requests at once from the allowed address: all pass ($got)" [ "$got" = "200 200 200 " ]
check "... no place taken" jq_true '.policies[] | select(.id == 3) | .concurrency.inflight == 0 and .concurrency.denied == 0' <<<"$(fc stats --json)"

check "allow del 127.0.0.1" fcq allow del 127.0.0.1
check "entry deleted: banned again" [ "$(codes 1 '/?uid=a')" = 403 ]
check "ban del 127.0.0.1" fcq ban del 127.0.0.1
check "... and limited again" [ "$(codes 2 '/?uid=c')" = "429 429" ]

# A uid: allowed under a uid ban and uid=*, while the address is limited.
check "ban add uid=vip" fcq ban add uid=vip
check "allow add uid=vip" fcq allow add uid=vip
got=$(codes 4 "/?uid=vip")
check "the allowed uid passes its ban, uid=* and the address's ip=* ($got)" [ "$got" = "200 200 200 200" ]
check "... logged as ALLOWED" [ "$(grep -c '^200 ALLOWED vip$' "$d/logs/access.log")" = 4 ]
check "ban list names the entry" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' ban list | grep '^uid=vip ' | grep -q 'overridden by allow uid=vip'"
check "another uid is limited as ever" [ "$(codes 1 '/?uid=d')" = 429 ]
check "allow add uid=vip --ttl 1s" fcq allow add uid=vip --ttl 1s
sleep 2.1
check "after its TTL the uid ban applies again" [ "$(codes 1 '/?uid=vip')" = 403 ]
check "no worker crashed" sh -c "! grep -q 'exited on signal' '$d/logs/error.log'"
exit 0
