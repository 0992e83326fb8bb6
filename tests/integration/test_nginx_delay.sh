#!/usr/bin/env bash
# --action delay in a real nginx, with a queue longer than a second: 60/m,
# burst 10, delay-burst 5, 30 requests at once for a file (a location that
# only `return`s is answered before PREACCESS and never limited). 10 pass at
# once, 5 wait about 1..5 s on nginx timers, 15 are refused with 429. The
# nginx started here is stopped by its pid on exit.
# tests/run.sh: alone: it tells delayed requests from immediate ones by their time (0.5 s).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (nginx as www-data, the shm's group)"
why=$(fc_nginx_missing)
[ -z "$why" ] || skip_all "$why"
trap 'fc_nginx_stop; fc_finish' EXIT
port=$(fc_port)
d=/tmp/fc-it-$tag
mkdir -p "$d"

fc policy add 1 --match uid=q --rate 60/m --burst 10 --action delay --delay-burst 5 >/dev/null
fc_nginx_start "127.0.0.1:$port" || skip_all "nginx did not start"

# 30 at once, from one curl process (30 processes started under load
# spread over a second or two, long enough for 60/m to refill); each line:
# status and seconds taken.
for n in $(seq 30); do printf 'url = "http://127.0.0.1:%s/?uid=q&n=%s"\noutput = "/dev/null"\n' "$port" "$n"; done >"$d/curl.cfg"
curl -s --parallel --parallel-immediate --parallel-max 30 --max-time 10 -K "$d/curl.cfg" \
	-w '%{http_code} %{time_total}\n' >"$d/out"
ok=$(grep -c '^200 ' "$d/out")
refused=$(grep -c '^429 ' "$d/out")
fast=$(awk '$1 == 200 && $2 < 0.5' "$d/out" | wc -l)
slow=$(awk '$1 == 200 && $2 >= 0.5' "$d/out" | wc -l)
longest=$(awk '$1 == 200 { if ($2 > m) m = $2 } END { print int(m + 0.5) }' "$d/out")
check "30 at once: 15 answered, 15 refused (got $ok, $refused)" [ "$ok/$refused" = 15/15 ]
check "... 10 of them at once, 5 delayed (got $fast, $slow)" [ "$fast/$slow" = 10/5 ]
check "... the last delayed about 5 s (got $longest s)" [ "$longest" -ge 4 -a "$longest" -le 6 ]
check "stats: 10 passed, 5 delayed, 15 denied" jq_true \
	'.policies[] | select(.id == 1) | .passed.packets == 10 and .delayed == 5 and .dropped.packets == 15' \
	<<<"$(fc stats --json)"
exit 0
