#!/usr/bin/env bash
# nginx's answers besides a refusal: a banned uid gets 403 (BANNED in the
# access log), a dry-run location passes everything and logs what it would
# have done, and "freqctl off" checks nothing; requests refused by a uid ban
# and by an address ban are counted apart (stats, --json, --prometheus).
# Real nginx serving files; stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag
mkdir -p "$d/html/dry"
echo ok >"$d/html/dry/index.html"

fc policy add 4 --match 'uri=/dry/,uid=u4' --rate 1/m >/dev/null
fc ban add uid=evil >/dev/null
fc ban add 198.51.100.9 >/dev/null
FC_NGX_ACCESS_LOG="log_format fc '\$status \$freqctl_status \$freqctl_policy'; access_log $d/logs/access.log fc;" \
	FC_NGX_HTTP="set_real_ip_from 127.0.0.1; real_ip_header X-Real-IP;" \
	FC_NGX_SERVER="location /dry/ { freqctl_dry_run on; } location /off/ { freqctl off; }" \
	fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"

check "uid ban: 403" [ "$(codes 1 '/?uid=evil')" = "403" ]
check "access log: BANNED" grep -q '^403 BANNED -$' "$d/logs/access.log"
got=$(codes 3 "/dry/?uid=u4")
check "dry run passes everything ($got)" [ "$got" = "200 200 200" ]
check "dry run logs what it would have done" grep -q 'policy 4 would reject request' "$d/logs/error.log"
check "access log: REJECTED_DRY_RUN" grep -q '^200 REJECTED_DRY_RUN 4$' "$d/logs/access.log"
check "freqctl off: not checked" [ "$(codes 2 '/off/?uid=evil')" = "404 404" ]

# Counted: 1 + 1 (dry run: decided, let through) by the uid ban, 2 by the
# address ban (the address realip takes from a trusted proxy), and one
# banned on both counted once, as the uid's.
check "address ban: 403" [ "$(codes 2 / -H 'X-Real-IP: 198.51.100.9')" = "403 403" ]
check "... uid and address banned: 403" [ "$(codes 1 '/?uid=evil' -H 'X-Real-IP: 198.51.100.9')" = 403 ]
codes 1 '/dry/?uid=evil' >/dev/null
check "stats --json: nginx's ban refusals, the uid's apart (3) from the address's (2)" \
	jq_true '.nginx_banned == {"uid": 3, "address": 2}' <<<"$(fc stats --json)"
check "stats: the same in text" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats | grep -Eq '^nginx: banned uid +3 ' &&
		'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats | grep -Eq '^nginx: banned address +2 '"
check "stats --prometheus: freqctl_nginx_banned_total by kind" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --prometheus | grep -qx 'freqctl_nginx_banned_total{kind=\"uid\"} 3' &&
		'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' stats --prometheus | grep -qx 'freqctl_nginx_banned_total{kind=\"address\"} 2'"
exit 0
