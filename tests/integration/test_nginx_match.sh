#!/usr/bin/env bash
# nginx matching policies by uid, argument, header and their combinations,
# with the uid from a variable or a complex value: exact pass counts, other
# keys unaffected, the refusal's headers (Retry-After, RateLimit-Policy,
# RateLimit), the access and error logs, and freqctl stats counting the
# requests. Real nginx (2 workers) serving files; stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag
mkdir -p "$d/html/cx" "$d/html/mx"
echo ok >"$d/html/cx/index.html"
echo ok >"$d/html/mx/index.html"

fc policy add 1 --match 'uid=u1' --rate 3/m >/dev/null
fc policy add 2 --match 'arg:api=login,uid=u2' --rate 2/m >/dev/null
fc policy add 3 --match 'header:X-Key=k3' --rate 1/m --rate 100/d >/dev/null
fc policy add 15 --match 'uid=team-red' --rate 2/m >/dev/null
fc policy add 16 --match 'uid=green' --rate 1/m >/dev/null
FC_NGX_WORKERS=2 FC_NGX_ACCESS_LOG="log_format fc '\$status \$freqctl_status \$freqctl_policy'; access_log $d/logs/access.log fc;" \
	FC_NGX_HTTP="map \$http_x_team \$arg_mteam { default \$http_x_team; }" \
	FC_NGX_SERVER="location /cx/ { freqctl_uid \"team-\$arg_team\"; } location /mx/ { freqctl_uid \$arg_mteam; }" \
	fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"

got=$(codes 3 "/cx/?team=red")
check "freqctl_uid as a complex value (\"team-\$arg_team\"): 2/m on team-red ($got)" [ "$got" = "200 200 429" ]
got=$(codes 1 "/cx/?team=blue")
check "... another team is not limited ($got)" [ "$got" = 200 ]
got=$(codes 2 "/mx/?mteam=green" -H "X-Team: other")
check "freqctl_uid \$arg_mteam that a map defines is the map's, not the argument's ($got)" [ "$got" = "200 200" ]
got=$(codes 2 "/mx/?mteam=other" -H "X-Team: green")
check "... uid=green 1/m by the header the map reads ($got)" [ "$got" = "200 429" ]
got=$(codes 2 "/?UID=team-red&uid=x")
check "\$arg_uid: ?UID=team-red&uid=x holds a copy team-red (any case), so uid=team-red applies ($got)" [ "$got" = "429 429" ]
got=$(codes 5 "/?uid=u1")
check "uid=u1 3/m: 3 of 5 pass ($got)" [ "$got" = "200 200 200 429 429" ]
check "another uid is unaffected" [ "$(codes 3 '/?uid=u9')" = "200 200 200" ]
hdrs=$(curl -s -D - -o /dev/null "$ngx_url/?uid=u1")
check "denied: Retry-After in whole seconds" grep -q '^Retry-After: [0-9]*' <<<"$hdrs"
check "denied: RateLimit-Policy" grep -q '^RateLimit-Policy: "p1";q=3;w=60' <<<"$hdrs"
check "denied: RateLimit" grep -q '^RateLimit: "p1";r=0;t=[0-9]*' <<<"$hdrs"
check "access log: REJECTED by policy 1" grep -q '^429 REJECTED 1$' "$d/logs/access.log"
check "error log names the policy and the uid" grep -q 'policy 1 rejected request, uid "u1"' "$d/logs/error.log"
stats=$(fc stats --json)
check "freqctl stats: policy 1 passed 3 in nginx" [ "$(jq '.policies[] | select(.id == 1) | .passed.packets' <<<"$stats")" = 3 ]
check "freqctl stats: policy 1 denied 3" [ "$(jq '.policies[] | select(.id == 1) | .dropped.packets' <<<"$stats")" = 3 ]

got=$(codes 4 "/?uid=u2&api=login")
check "arg:api=login,uid=u2 2/m: 2 of 4 ($got)" [ "$(count "$got" 200)" = 2 ]
check "same uid, other arg: unaffected" [ "$(codes 3 '/?uid=u2&api=other')" = "200 200 200" ]
got=$(codes 3 "/" -H "X-Key: k3")
check "header:x-key=k3 1/m: 1 of 3 ($got)" [ "$got" = "200 429 429" ]
check "other header value: unaffected" [ "$(codes 2 / -H 'X-Key: k4')" = "200 200" ]
check "no worker crashed" sh -c "! grep -q 'exited on signal' '$d/logs/error.log'"
exit 0
