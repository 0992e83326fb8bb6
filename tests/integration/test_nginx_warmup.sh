#!/usr/bin/env bash
# --warmup in real nginx: a cold key admits one request at a time, refused
# ones get Retry-After and a RateLimit-Policy at the ramped quota (N/3); a
# client asking all the time gets about 10 + 10 t a second for 2 s, then 30
# a second (30/s --warmup 2s; without warm-up: 60 in the first second, the
# burst and the rate). Times from nginx's own access log. Real nginx;
# stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite

fc policy add 8 --match 'uid=*' --rate 30/s --warmup 2s >/dev/null
check "policy list says warmup 2s" grep -q '^8 .* 2s$' <<<"$(fc policy list)"
log=/tmp/fc-it-$tag/logs/access.log
FC_NGX_ACCESS_LOG="log_format fcw '\$msec \$arg_uid \$status'; access_log $log fcw;"
fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"

# N requests for uid U on one connection, back to back: their statuses.
burst() { # burst N U
	local args=() i
	for i in $(seq "$1"); do args+=(-o /dev/null "$ngx_url/?uid=$2"); done
	curl -s -w '%{http_code} ' "${args[@]}" | sed 's/ $//'
}
got=$(burst 5 w1)
check "cold: 1 of 5 at once, no burst ($got)" [ "$got" = "200 429 429 429 429" ]
# The refusal's headers: the second of two requests on one connection.
hdr=$(curl -s -o /dev/null "$ngx_url/?uid=w3" --next -s -D - -o /dev/null "$ngx_url/?uid=w3" | tr -d '\r')
ra=$(sed -n 's/^Retry-After: //Ip' <<<"$hdr")
check "Retry-After on the refusal ($ra s)" [ "${ra:-0}" = 1 ]
check "RateLimit-Policy: the ramped quota, about 10 per 1 s" grep -qiE '^RateLimit-Policy: "p8";q=1[0-3];w=1' <<<"$hdr"

# A fresh key asked all the time for 3.5 s (curl stopped by timeout).
cfg=/tmp/fc-it-$tag/curl.cfg
for _ in $(seq 20000); do printf 'url = "%s"\noutput = "/dev/null"\n' "$ngx_url/?uid=w2"; done >"$cfg"
timeout 3.5 curl -s -K "$cfg" >/dev/null
per_s=$(awk '$2 == "w2" { if (!t0) t0 = $1; n[int($1 - t0)] += $3 == 200; all++ }
	END { printf "%d %d %d %d", n[0], n[1], n[2], all }' "$log")
read -r s0 s1 s2 tries <<<"$per_s"
check "a client asking all the time ($tries in 3.5 s)" [ "$tries" -ge 300 ]
# r = 10 + 10 t: 16 in the first second (15 and the one at 0), 25 in the
# second, then 30; a few less for a request that comes a little late.
check "ramp: first second about 16 ($s0)" [ "$s0" -ge 13 -a "$s0" -le 17 ]
check "ramp: second second about 25 ($s1)" [ "$s1" -ge 22 -a "$s1" -le 26 ]
check "ramp: third second 30, warm ($s2)" [ "$s2" -ge 28 -a "$s2" -le 31 ]
check "nginx logged no error" sh -c "! grep -E '\[(alert|crit|emerg|error)\]' /tmp/fc-it-$tag/logs/error.log"
exit 0
