#!/usr/bin/env bash
# --warmup in real nginx: a cold key admits one request at a time, refused
# ones get Retry-After and a RateLimit-Policy at the ramped quota (N/3); a
# client asking all the time gets about 10 + 10 t a second for 2 s, then 30
# a second (30/s --warmup 2s; without warm-up: 60 in the first second, the
# burst and the rate), and exactly what a model of the rule admits for the
# same request times, from nginx's own access log. Real nginx; stopped by
# its pid on exit.
# tests/run.sh: alone: a cold key's ramp admits a request per 100 ms at first.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite

fc policy add 8 --match 'uid=*' --rate 30/s --warmup 2s >/dev/null
check "policy list says warmup 2s" grep -qE '^8 .* 2s +-$' <<<"$(fc policy list)"
log=/tmp/fc-it-$tag/logs/access.log
FC_NGX_ACCESS_LOG="log_format fcw '\$msec \$arg_uid \$status'; access_log $log fcw;"
fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"

# N requests for uid U on one connection, back to back: their statuses.
burst() { # burst N U
	local args=()
	for _ in $(seq "$1"); do args+=(-o /dev/null "$ngx_url/?uid=$2"); done
	curl -s -w '%{http_code} ' "${args[@]}" | sed 's/ $//'
}
got=$(burst 5 w1)
check "cold: 1 of 5 at once, no burst ($got)" [ "$got" = "200 429 429 429 429" ]
# The refusal's headers: the second of two requests on one connection.
hdr=$(curl -s -o /dev/null "$ngx_url/?uid=w3" --next -s -D - -o /dev/null "$ngx_url/?uid=w3" | tr -d '\r')
ra=$(sed -n 's/^Retry-After: //Ip' <<<"$hdr")
check "Retry-After on the refusal ($ra s)" [ "${ra:-0}" = 1 ]
check "RateLimit-Policy: the ramped quota, about 10 per 1 s" grep -qiE '^RateLimit-Policy: "p8";q=1[0-3];w=1' <<<"$hdr"

# A fresh key asked all the time for 3.5 s (curl stopped by timeout; more
# URLs than a fast machine asks for in that time).
cfg=/tmp/fc-it-$tag/curl.cfg
for _ in $(seq 200000); do printf 'url = "%s"\noutput = "/dev/null"\n' "$ngx_url/?uid=w2"; done >"$cfg"
timeout 3.5 curl -s -K "$cfg" >/dev/null
# Per second from the first request: what passed, and what the rule admits
# for these very request times (a model of it in awk, in floating point,
# fed nginx's own times): the module must agree with it to a request or
# so (a time at a rounding edge), however fast this machine let curl ask.
per_s=$(awk -v T=33.333334 -v B=30 -v D=2000 -v G=10 '
	$2 != "w2" { next }
	{
		t = $1 * 1000
		if (!n++) { t0 = t; tat = 0; ws = -1e18 }
		last = tat > ws ? tat : ws
		if (t - last >= D) ws = t
		e = t - ws; if (e > D) e = D
		inc = T * 3 * D / (D + 2 * e)
		tol = B * T > inc ? B * T : inc
		cap = inc > G ? inc : G; if (cap > tol) cap = tol
		fl = (e < D ? t : ws + D) + tol - cap
		base = tat > t ? tat : t; if (fl > base) base = fl
		ok = base + inc - t <= tol + 1e-6
		if (ok) tat = base + inc
		s = int((t - t0) / 1000)
		rule[s] += ok; got[s] += $3 == 200
	}
	END { printf "%d %d %d %d %d %d %d", got[0], got[1], got[2], rule[0], rule[1], rule[2], n }' "$log")
read -r s0 s1 s2 r0 r1 r2 tries <<<"$per_s"
check "a client asking all the time ($tries in 3.5 s)" [ "$tries" -ge 300 ]
d0=$((s0 - r0)) d1=$((s1 - r1)) d2=$((s2 - r2))
check "each second as the rule has it for these requests ($s0 $s1 $s2; the rule $r0 $r1 $r2)" \
	[ "${d0#-}" -le 1 -a "${d1#-}" -le 1 -a "${d2#-}" -le 1 ]
# r = 10 + 10 t: at most 16 in the first second (15 and the one at 0), 25
# in the second, then 30; fewer only if the client let time go by.
check "ramp: first second about 16 ($s0)" [ "$s0" -ge 8 -a "$s0" -le 17 ]
check "ramp: second second about 25 ($s1)" [ "$s1" -ge 12 -a "$s1" -le 26 ]
check "ramp: third second 30, warm ($s2)" [ "$s2" -ge 20 -a "$s2" -le 31 ]
check "nginx logged no error (its refusals aside)" sh -c "! grep -E '\[(alert|crit|emerg|error)\]' /tmp/fc-it-$tag/logs/error.log | grep -vE '\] [0-9]+#[0-9]+: \*[0-9]+ freqctl: policy [0-9]+ rejected request, '"
exit 0
