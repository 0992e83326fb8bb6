#!/usr/bin/env bash
# --concurrency in a real nginx (2 workers) serving slow responses (limit_rate
# on a 64 KB file: about 3 s each): N=2 and five at once, two pass and three
# are refused; places come back when requests end, when the client goes away,
# on upstream errors and timeouts; subrequests and internal redirects take no
# place of their own; per key; with a rate; per key with a rate warming up
# (--warmup: the ramp and the cap both hold); a worker SIGKILLed holding places
# (its replacement gives them back: measured); escalation counts refusals by
# the cap. nginx, the agent and the hanging upstream started here are
# stopped by their pids on exit.
# tests/run.sh: alone: a warm-up ramp of one a second, and places back within 1 s of a kill.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag
port=$(fc_port 0)
dead=$(fc_port 1) # nothing listens here
hang=$(fc_port 2) # accepts, never answers
hpid= apid=
stop_ours() {
	[ -n "$hpid" ] && kill "$hpid" 2>/dev/null
	[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	fc_nginx_stop
}
trap 'stop_ours; fc_finish' EXIT
mkdir -p "$d/html/slow" "$d/html/slower" "$d/html/fast" "$d/html/ssi" "$d/html/inc" "$d/html/ar" "$d/html/mi"
head -c 65536 /dev/zero | tr '\0' s >"$d/html/slow/f"
cp "$d/html/slow/f" "$d/html/fast/f"
cp "$d/html/slow/f" "$d/html/slower/f"
printf INCLUDED >"$d/html/inc/small"
printf 'before <!--# include virtual="/inc/small" --> after\n' >"$d/html/ssi/page.html"
echo ok >"$d/html/ar/page"
echo ok >"$d/html/mi/page"
echo ok >"$d/html/auth_ok"

# An upstream that takes connections and never answers, for proxy_read_timeout.
timeout 120 python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); held = []
while True: held.append(s.accept()[0])' "$hang" &
hpid=$!

FC_NGX_WORKERS=2 \
FC_NGX_ACCESS_LOG="log_format fc '\$status \$freqctl_status \$freqctl_policy \$arg_uid \$uri'; access_log $d/logs/access.log fc;" \
FC_NGX_SERVER="
	location /slow/ { limit_rate 16k; }
	location /slower/ { limit_rate 8k; }
	location /ssi/ { ssi on; }
	location /ar/ { auth_request /auth_ok; }
	location /mi/ { mirror /fast/f; }
	location = /auth_ok { internal; }
	location /rw/ { rewrite ^/rw/(.*)\$ /fast/\$1 last; }
	location /ep/ { error_page 404 = /fast/f; }
	location /tf/ { try_files \$uri /slow/f; }
	location /xa/ { proxy_pass http://127.0.0.1:$port/xa_up/; }
	location /xa_up/ { freqctl off; add_header X-Accel-Redirect /fast/f; return 204; }
	location /dead/ { proxy_pass http://127.0.0.1:$dead/; }
	location /hang/ { proxy_pass http://127.0.0.1:$hang/; proxy_read_timeout 1s; }" \
	fc_nginx_start "127.0.0.1:$port" || skip_all "nginx did not start"

# N requests to PATH at once (in the background); each status into FILE, a
# line. ended waits for every one of them.
pids=()
at_once() { # at_once N PATH FILE [curl args]
	local n=$1 path=$2 out=$3 i
	shift 3
	: >"$out"
	for i in $(seq "$n"); do
		curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "$@" "$ngx_url$path" >>"$out" &
		pids+=($!)
	done
}
ended() {
	[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"
	pids=()
}
# The statuses of a batch, sorted, on one line.
statuses() { sort "$1" | tr '\n' ' ' | sed 's/ $//'; }
# A policy's places in flight now (stats --json), and its refusals by the cap.
inflight() { fc stats --json | jq ".policies[] | select(.id == $1) | .concurrency.inflight"; }
by_cap() { fc stats --json | jq ".policies[] | select(.id == $1) | .concurrency.denied"; }
# Polls (at most S seconds) until policy ID has N places in flight.
inflight_is() { wait_until "$3" inflight_now "$1" "$2"; } # inflight_is ID N S
inflight_now() { [ "$(inflight "$1")" = "$2" ]; }

fcq policy add 1 --match uid=s --concurrency 2
at_once 5 '/slow/f?uid=s' "$d/five"
check "N=2, five slow requests at once: two in flight" inflight_is 1 2 5
ended
check "... two passed, three refused ($(statuses "$d/five"))" [ "$(statuses "$d/five")" = "200 200 429 429 429" ]
check "... refused with \$freqctl_status REJECTED, by policy 1" \
	[ "$(grep -c '^429 REJECTED 1 s /slow/f$' "$d/logs/access.log")" = 3 ]
check "... the passed ones PASSED" [ "$(grep -c '^200 PASSED - s /slow/f$' "$d/logs/access.log")" = 2 ]
check "... ended normally: their places came back" inflight_is 1 0 2
check "stats: 3 refused by the cap, counted as dropped too" \
	jq_true '.policies[] | select(.id == 1) | .concurrency == {"limit": 2, "inflight": 0, "denied": 3} and
		.dropped.packets == 3 and .passed.packets == 2' <<<"$(fc stats --json)"
at_once 2 '/slow/f?uid=s' "$d/two"
inflight_is 1 2 5
hdrs=$(curl -s -D - -o /dev/null "$ngx_url/slow/f?uid=s" | tr -d '\r')
ended
# Every line of $2 is a line of $1.
has_lines() { [ -z "$(grep -vxFf <(echo "$1") <<<"$2")" ]; }
check "a refusal says the cap: RateLimit-Policy q=2 of concurrent requests, RateLimit r=0, Retry-After 1" \
	has_lines "$hdrs" 'RateLimit-Policy: "p1";q=2;qu="concurrent-requests"
RateLimit: "p1";r=0
Retry-After: 1'
check "Prometheus: in flight now, the cap, refusals by it" has_lines "$(fc stats --prometheus)" \
	'freqctl_policy_inflight{policy="1",match="uid=s"} 0
freqctl_policy_concurrency_limit{policy="1",match="uid=s"} 2
freqctl_policy_concurrency_denied_total{policy="1",match="uid=s"} 4'


# The client goes away mid-response: nginx's next write fails and ends the request.
at_once 2 '/slow/f?uid=s' "$d/gone" --max-time 1
check "clients that go away mid-response: their two places held meanwhile" inflight_is 1 2 1
ended
t0=$(date +%s.%N)
inflight_is 1 0 5
check "... and back $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after they left" \
	[ "$(inflight 1)" = 0 ]

# Upstream errors and timeouts end the request too.
fcq policy set 1 --match uid=s --concurrency 1
check "N=1: an upstream that refuses connections: 502, 502, 502 (not 429: each place came back)" \
	[ "$(codes 3 '/dead/x?uid=s')" = "502 502 502" ]
at_once 2 '/hang/x?uid=s' "$d/hang"
ended
check "an upstream that never answers, two at once: one times out (504), one refused ($(statuses "$d/hang"))" \
	[ "$(statuses "$d/hang")" = "429 504" ]
check "... then the place is back: the next one times out too" [ "$(codes 1 '/hang/x?uid=s')" = 504 ]
check "... nothing left in flight" inflight_is 1 0 2

# One place a request, whatever it becomes inside nginx.
check "a subrequest (SSI include) takes no second place: N=1, the include is there" \
	[ "$(curl -s "$ngx_url/ssi/page.html?uid=s")" = "before INCLUDED after" ]
check "an auth_request subrequest takes none either: N=1, 200" [ "$(codes 1 '/ar/page?uid=s')" = 200 ]
before=$(fc stats --json | jq -c '.policies[] | select(.id == 1) | [.passed.packets, .dropped.packets]')
got=$(codes 1 '/mi/page?uid=s')
after=$(fc stats --json | jq -c '.policies[] | select(.id == 1) | [.passed.packets - 1, .dropped.packets]')
check "nor a mirror subrequest: one decision, one pass, nothing refused ($got; passed, dropped: $before then $after + 1 passed)" \
	[ "$got/$after" = "200/$before" ]
for how in "rw/f rewrite ... last" "ep/missing error_page" "tf/missing try_files" "xa/x X-Accel-Redirect"; do
	path=${how%% *}
	got=$(curl -s -o "$d/body" -w '%{http_code}' --max-time 20 "$ngx_url/$path?uid=s")
	check "an internal redirect by ${how#* } takes no second place: N=1, the file it names ($got, $(stat -c %s "$d/body") bytes)" \
		[ "$got/$(stat -c %s "$d/body")" = 200/65536 ]
done
at_once 1 '/tf/missing?uid=s' "$d/one"
inflight_is 1 1 5
check "... the redirected request holds its one place while it runs" [ "$(codes 1 '/slow/f?uid=s')" = 429 ]
ended
check "... and gives it back at its end" inflight_is 1 0 2
fcq policy del 1

# Per key: each uid its own N.
fcq policy add 2 --match 'uid=*' --concurrency 2
at_once 5 '/slow/f?uid=u1' "$d/u1"
at_once 5 '/slow/f?uid=u2' "$d/u2"
two_each() { jq_true 'length == 2 and all(.inflight == 2 and .held)' <<<"$(fc keys 2 --json)"; }
check "uid=* N=2: two in flight for each of u1 and u2 (freqctl keys)" wait_until 5 two_each
ended
check "... u1: two passed, three refused ($(statuses "$d/u1"))" [ "$(statuses "$d/u1")" = "200 200 429 429 429" ]
check "... u2: the same, its own ($(statuses "$d/u2"))" [ "$(statuses "$d/u2")" = "200 200 429 429 429" ]
check "... back to none in flight, keys no longer held" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' keys 2 --json | jq -e 'all(.inflight == 0 and (.held | not))' >/dev/null"
fcq policy del 2

# With a rate: both admit, and a request refused by one is charged by neither.
fcq policy add 3 --match uid=r --rate 2/m --concurrency 1
at_once 1 '/slow/f?uid=r' "$d/r1"
inflight_is 3 1 5
check "--rate 2/m --concurrency 1: while one is in flight, three refused by the cap" \
	[ "$(codes 3 '/?uid=r')" = "429 429 429" ]
ended
check "... which cost nothing of the rate: one more passes, then the rate refuses" \
	[ "$(codes 2 '/?uid=r')" = "200 429" ]
check "... a refusal by the rate took no place: none in flight" [ "$(inflight 3)" = 0 ]
fcq policy del 3

# --warmup and --concurrency per key: a key's bucket holds the rate's word,
# the ramp's and its count of places. Cold, the ramp (3/s starting at 1/s:
# one a second) passes one of four at once though the cap has room for two;
# warmer, it admits a second; a third it would admit is refused by the cap.
# Responses of /slower/ take about 7 s.
fcq policy add 7 --match 'uid=*' --rate 3/s --warmup 10s --concurrency 2
check "policy list: WARMUP 10s, CONCURRENCY 2" grep -qE '^7 .* 10s +2$' <<<"$(fc policy list)"
at_once 4 '/slower/f?uid=w' "$d/w1"
sleep 1.5
check "--rate 3/s --warmup 10s --concurrency 2, cold, four slow requests at once: the ramp passes one" \
	[ "$(inflight 7)" = 1 ]
at_once 1 '/slower/f?uid=w' "$d/w2"
sleep 1.2
check "... 1.5 s into the ramp it admits another: two in flight" [ "$(inflight 7)" = 2 ]
hdrs=$(curl -s -D - -o /dev/null --max-time 20 "$ngx_url/slower/f?uid=w" | tr -d '\r')
check "... a third, which the ramp would admit now, is refused by the cap" \
	has_lines "$hdrs" 'RateLimit-Policy: "p7";q=2;qu="concurrent-requests"'
check "... freqctl keys: the key holds its 2 places (the count's word past the rate's and the ramp's)" \
	jq_true 'length == 1 and .[0].inflight == 2 and .[0].held' <<<"$(fc keys 7 --json)"
ended
check "... the four at once: one passed, three refused ($(statuses "$d/w1")); the next passed ($(statuses "$d/w2"))" \
	[ "$(statuses "$d/w1")/$(statuses "$d/w2")" = "200 429 429 429/200" ]
check "... the places came back at their end; the key is no longer held" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' keys 7 --json | jq -e 'length == 1 and all(.inflight == 0 and (.held | not))' >/dev/null"
hdrs=$(curl -s -D - -o /dev/null "$ngx_url/?uid=w" -o /dev/null "$ngx_url/?uid=w" -o /dev/null "$ngx_url/?uid=w" \
	-o /dev/null "$ngx_url/?uid=w" -o /dev/null "$ngx_url/?uid=w" | tr -d '\r')
check "... five at once, none in flight: a refusal by the rate, its quota (ramped: 1 to 3 a second)" \
	grep -qE '^RateLimit-Policy: "p7";q=[123];w=1$' <<<"$hdrs"
fcq policy del 7

# A worker killed with SIGKILL while it holds places.
fcq policy add 4 --match uid=k --concurrency 2
fcq policy add 5 --match 'uid=*' --concurrency 2
master=$(cat "$d/nginx.pid")
old=$(pgrep -P "$master" | sort)
at_once 2 '/slow/f?uid=k' "$d/k"
inflight_is 4 2 3
check "two slow requests hold two places of each policy" [ "$(inflight 4)/$(inflight 5)" = 2/2 ]
holders=$(ss -Htnp state established "( sport = :$port )" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
check "... in worker(s) $(echo $holders)" [ -n "$holders" ]
kill -KILL $holders
new= back=
for _ in $(seq 300); do # 3 s at most
	up=$(cut -d' ' -f1 /proc/uptime)
	[ -z "$new" ] && new=$(comm -13 <(echo "$old") <(pgrep -P "$master" | sort) | head -1)
	if [ -n "$new" ] && [ "$(inflight 4)/$(inflight 5)" = 0/0 ]; then back=$up; break; fi
	sleep 0.01
done
ended
# The replacement's start, on the same clock (seconds since boot).
started=$(awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] / hz }' "/proc/$new/stat")
ms=$(awk -v a="$started" -v b="$back" 'BEGIN { printf "%d", (b - a) * 1000 }')
[ -n "$back" ] && took="${ms} ms after its start" || took="not within 3 s of the kill"
check "the master started a replacement (${new:-none}), and the places were back $took (within 1 s)" \
	[ -n "$back" ] && [ "$ms" -lt 1000 ]
check "... it said so in the error log" grep -q 'gave back [0-9]* concurrency places of workers that are gone' "$d/logs/error.log"
at_once 2 '/slow/f?uid=k' "$d/k2"
ended
check "... both places usable again: two at once pass" [ "$(statuses "$d/k2")" = "200 200" ]
fcq policy del 4
fcq policy del 5

# Escalation counts a refusal by the cap like any other: the agent bans the
# client, and nginx then refuses it as banned (403).
fcq policy add 6 --match uid=e --concurrency 1 --escalate 2/m --ban-ttl 30s
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent >"$d/agent.log" 2>&1 &
apid=$!
for _ in $(seq 50); do grep -q "watching store" "$d/agent.log" && break; sleep 0.1; done
at_once 1 '/slow/f?uid=e' "$d/e"
inflight_is 6 1 5
got=$(codes 3 '/?uid=e')
check "escalation: 3 refused by the cap ($got)" [ "$got" = "429 429 429" ]
for _ in $(seq 40); do grep -q "escalated: 127.0.0.1" "$d/agent.log" && break; sleep 0.05; done
check "... past --escalate 2/m: the agent banned the client" grep -q "escalated: 127.0.0.1 banned" "$d/agent.log"
for _ in $(seq 20); do [ "$(codes 1 '/?uid=e')" = 403 ] && break; sleep 0.1; done
check "... and nginx now refuses it as banned" [ "$(codes 1 '/?uid=e')" = 403 ]
ended
check "no worker crashed but the one(s) killed" [ "$(grep -c 'exited on signal' "$d/logs/error.log")" = "$(echo $holders | wc -w)" ]
exit 0
