#!/usr/bin/env bash
# --algo sliding in real nginx: a fresh key admits N, the next request is
# refused with Retry-After and the RateLimit headers. Real nginx; stopped by
# its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite

# A minute window: stay clear of its end, where c_prev would start to count.
while [ $((60 - $(date +%s) % 60)) -lt 5 ]; do sleep 0.2; done
fc policy add 6 --match 'uid=*' --rate 3/m --algo sliding >/dev/null
list=$(fc policy list)
check "policy list says sliding" grep -q '^6 .* sliding ' <<<"$list"
fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"

got=$(codes 5 '/?uid=s1')
check "3/m sliding: 3 of 5 ($got)" [ "$got" = "200 200 200 429 429" ]
hdr=$(curl -s -D - -o /dev/null "$ngx_url/?uid=s1" | tr -d '\r')
ra=$(sed -n 's/^Retry-After: //Ip' <<<"$hdr")
check "Retry-After on the refusal ($ra s)" [ "${ra:-0}" -ge 1 -a "${ra:-0}" -le 120 ]
check "RateLimit-Policy: 3 per 60 s" grep -qi '^RateLimit-Policy: "p6";q=3;w=60' <<<"$hdr"
check "another key has its own window" [ "$(codes 1 '/?uid=s2')" = "200" ]
exit 0
