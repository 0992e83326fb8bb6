#!/usr/bin/env bash
# A soak: freqctl under steady load and churn for N minutes, then the verdict.
#
#   tools/soak.sh --minutes N [--json]
#
# Sets up what the integration tests use (tests/integration/lib.sh): a
# namespace and veth with freqctl attached at XDP, an agent serving the
# console, Debian's nginx with the module (2 workers), all on scratch paths,
# removed at the end. Meanwhile:
#   - clients ask nginx as uid=soak (a limited policy) and other uids;
#   - the namespace pings through XDP, past a limited ip= policy;
#   - each second, 20 policy changes and 100 ban changes through the
#     console's API, and the console's policies and stats are read;
#   - every 10 s, the agent's and nginx's memory (RSS) and open files.
# It fails if, after the first fifth (warm-up), memory or open files keep
# growing: the floor (the least sampled) of the second half past the first
# half's by 10% and 2 MiB, or by 4 files (peaks come and go with each
# publish; what leaks raises the floor), if the counters of the two limited policies are not
# exactly what the clients saw, or if anything logged an error. Progress
# shows on a terminal; --json prints the figures as one object. Needs root.
set -u
minutes= json=
while [ $# -gt 0 ]; do
	case $1 in
	--minutes) minutes=${2:-}; shift 2 ;;
	--minutes=*) minutes=${1#*=}; shift ;;
	--json) json=1; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak.sh: unknown argument \"$1\" (see --help)" >&2; exit 2 ;;
	esac
done
case $minutes in
'' | *[!0-9]* | 0) echo "soak.sh: --minutes N: expected a whole number of minutes, at least 1" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
FC_BIN=${FC_BIN:-$root/build/freqctl} FC_NGX_MODULE=${FC_NGX_MODULE:-$root/build/ngx_http_freqctl_module.so}
. "$root/tests/integration/lib.sh"
cd "$root" || exit 1 # lib.sh goes to where a test would be
tap_planned=1 # lib.sh's TAP plan is not ours to print
d=/tmp/fc-it-$tag
# Below the ephemeral range (32768-): thousands of client connections a
# minute must not take the ports we listen on.
port=$((20000 + tag % 6000))
web=$((port + 6000))
apid= pids=()
stop_ours() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	fc_nginx_stop
}
trap 'stop_ours; fc_finish' EXIT
say() { [ -n "$json" ] || echo "soak: $*"; }
progress() { [ -t 1 ] && [ -z "$json" ] && printf '\r\033[Ksoak: %s' "$*"; }
die() { echo "soak: $*" >&2; exit 1; }

why=$(fc_nginx_missing)
[ -z "$why" ] || die "$why"
[ "$(id -u)" = 0 ] || die "needs root (namespaces, XDP)"
fc_setup
mkdir -p "$d"
fcq attach "$host" --mode xdp || die "attach failed"
fcq policy add 1 --match uid=soak --rate 50/s --burst 10 || die "policy 1"
fcq policy add 2 --match ip=198.18.0.2 --rate 40/s --burst 5 || die "policy 2"
FC_NGX_WORKERS=2 fc_nginx_start "127.0.0.1:$web" || die "nginx did not start"
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent -q --http "127.0.0.1:$port" --token-file "$d/token" \
	>"$d/agent.log" 2>&1 &
apid=$!
for _ in $(seq 50); do grep -q "watching store" "$d/agent.log" && break; sleep 0.1; done
kill -0 "$apid" 2>/dev/null && grep -q "serving the console" "$d/agent.log" || die "the agent did not start: $(cat "$d/agent.log")"
token=$(cat "$d/token") || die "the agent made no token"
api="http://127.0.0.1:$port/api"
end=$(($(date +%s) + minutes * 60))

# Clients of nginx: uid=soak (limited) and others; each status on a line.
for c in 1 2; do
	(while [ "$(date +%s)" -lt "$end" ]; do
		curl -s -w '%{http_code}\n' --max-time 5 -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
			"$ngx_url/?uid=soak" "$ngx_url/?uid=soak" "$ngx_url/?uid=other$c" "$ngx_url/?uid=soak"
	done >"$d/client.$c") &
	pids+=($!)
done
# Pings through XDP, past policy 2 (40/s), asked for at 100/s; a loaded
# machine sends fewer (~80/s seen), and the count is set so they end with
# the run rather than after it.
ip netns exec "$ns" ping -4 -n -q -i 0.01 -c $((minutes * 60 * 75)) -W 1 198.18.0.1 >"$d/ping" 2>&1 &
pids+=($!)
# Churn through the console: each second 20 policy changes and 100 ban changes
# (one curl, one connection), and the console's reads.
(
	s=0
	while [ "$(date +%s)" -lt "$end" ]; do
		t=$(date +%s%N)
		args=()
		each=(-s -o /dev/null -w '%{http_code}\n' --max-time 10 -H "Authorization: Bearer $token")
		for i in $(seq 0 19); do
			id=$((100 + (s * 20 + i) % 200))
			if ((s / 10 % 2)); then
				args+=(--next "${each[@]}" -X DELETE "$api/policies/$id")
			else
				args+=(--next "${each[@]}" -X PUT -H 'Content-Type: application/json'
					--data "{\"match\": \"uid=churn$id\", \"rates\": [\"$((s % 50 + 1))/s\"]}" "$api/policies/$id")
			fi
		done
		for i in $(seq 0 99); do
			a=198.19.$((s / 2 % 200)).$i
			if ((s % 2)); then
				args+=(--next "${each[@]}" -X DELETE "$api/bans/$a")
			else
				args+=(--next "${each[@]}" -X POST -H 'Content-Type: application/json'
					--data "{\"ban\": \"$a\", \"ttl\": 3600}" "$api/bans")
			fi
		done
		args+=(--next "${each[@]}" "$api/policies" --next "${each[@]}" "$api/stats")
		curl "${args[@]:1}" >>"$d/churn"
		s=$((s + 1))
		left=$((1000000000 - ($(date +%s%N) - t)))
		[ "$left" -gt 0 ] && sleep "0.$(printf '%09d' "$left")"
	done
) &
pids+=($!)

# Samples: time, then RSS (KiB) and open files of the agent and each nginx process.
master=$(cat "$d/nginx.pid")
sample() {
	local p rss fds line=$1
	for p in "$apid" "$master" $(pgrep -P "$master"); do
		rss=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
		fds=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
		line="$line $rss $fds"
	done
	echo "$line" >>"$d/samples"
}
: >"$d/samples"
start=$(date +%s)
while [ "$(date +%s)" -lt "$end" ]; do
	sleep 10
	sample $(($(date +%s) - start))
	progress "$(( ($(date +%s) - start) / 60 )) of $minutes min: $(wc -l <"$d/churn") API writes answered, agent RSS $(awk 'END {print $2}' "$d/samples") KiB"
done
[ -t 1 ] && [ -z "$json" ] && printf '\r\033[K'
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
pids=()
sleep 1 # the last churn published

# ---- the verdict ----
fails=()
# Growth after warm-up, per column (agent rss, agent fds, master..., workers...).
growth=$(awk -v warm=$((minutes * 60 / 5)) '
	$1 >= warm { n++; for (i = 2; i <= NF; i++) v[n, i] = $i; if (NF > nf) nf = NF }
	END {
		h = int(n / 2)
		for (i = 2; i <= nf; i++) {
			if (h == 0 || n - h == 0) continue
			a = v[1, i]; b = v[h + 1, i]
			for (k = 1; k <= h; k++) if (v[k, i] < a) a = v[k, i]
			for (k = h + 1; k <= n; k++) if (v[k, i] < b) b = v[k, i]
			what = (i % 2 == 0) ? "rss" : "fds"
			who = (i <= 3) ? "agent" : (i <= 5) ? "nginx master" : "nginx worker " int((i - 6) / 2 + 1)
			grew = (what == "rss") ? (b > a * 1.10 && b - a > 2048) : (b > a + 4)
			printf "%s|%s|%.0f|%.0f|%d\n", who, what, a, b, grew
		}
	}' "$d/samples")
while IFS='|' read -r who what a b grew; do
	[ "$grew" = 1 ] && fails+=("$who $what grew after warm-up: $a -> $b")
done <<<"$growth"
growth_json=$(jq -R 'split("|") | {who: .[0], what: .[1], first_half_floor: (.[2] | tonumber), second_half_floor: (.[3] | tonumber), grew: (.[4] == "1")}' \
	<<<"$growth" | jq -s -c .)

# Exact counts: nginx's counters for policy 1 against what its clients saw.
stats=$(fc stats --json)
seen_pass=$(cat "$d"/client.* | grep -c '^200$')
seen_deny=$(cat "$d"/client.* | grep -c '^429$')
other=$(cat "$d"/client.* | grep -vcE '^(200|429)$')
p1_pass=$(jq '.policies[] | select(.id == 1) | .passed.packets' <<<"$stats")
p1_deny=$(jq '.policies[] | select(.id == 1) | .dropped.packets' <<<"$stats")
soak_sent=$(( $(cat "$d"/client.* | wc -l) * 3 / 4 ))
# Each line of a client is one of 4 requests, 3 of them uid=soak; others all pass.
others_pass=$(( $(cat "$d"/client.* | wc -l) / 4 ))
[ "$p1_deny" = "$seen_deny" ] || fails+=("policy 1 denied $p1_deny in nginx's counters, the clients saw $seen_deny")
[ "$((p1_pass + others_pass))" = "$seen_pass" ] ||
	fails+=("policy 1 passed $p1_pass (+ $others_pass other uids) in the counters, the clients saw $seen_pass")
[ "$other" = 0 ] || fails+=("$other nginx answers neither 200 nor 429")
# XDP: policy 2's counters against the pings.
sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' "$d/ping")
received=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$d/ping")
p2_pass=$(jq '.policies[] | select(.id == 2) | .passed.packets' <<<"$stats")
p2_drop=$(jq '.policies[] | select(.id == 2) | .dropped.packets' <<<"$stats")
[ "$((p2_pass + p2_drop))" = "$sent" ] || fails+=("policy 2 counted $p2_pass + $p2_drop packets, $sent pings were sent")
[ "$p2_pass" = "$received" ] || fails+=("policy 2 passed $p2_pass pings, $received replies came back")
# Errors logged.
churn_total=$(wc -l <"$d/churn")
churn_bad=$(grep -vcE '^(200|201|204|404)$' "$d/churn")
[ "$churn_bad" = 0 ] || fails+=("$churn_bad console answers were errors ($(grep -vE '^(200|201|204|404)$' "$d/churn" | sort | uniq -c | tr '\n' ' '))")
agent_err=$(grep -ciE 'cannot|error|fail|lost|not banned' "$d/agent.log")
[ "$agent_err" = 0 ] || fails+=("the agent logged $agent_err problems: $(grep -iE 'cannot|error|fail|lost|not banned' "$d/agent.log" | head -3)")
ngx_err=$(grep -cE '\[(error|crit|alert|emerg)\]|exited on signal' "$d/logs/error.log")
[ "$ngx_err" = 0 ] || fails+=("nginx logged $ngx_err errors: $(grep -E '\[(error|crit|alert|emerg)\]|exited on signal' "$d/logs/error.log" | head -3)")

if [ -n "$json" ]; then
	printf '%s\n' "${fails[@]}" | jq -R . | jq -s \
		--argjson minutes "$minutes" --argjson churn "$churn_total" --argjson soak_sent "$soak_sent" \
		--argjson p1_pass "$p1_pass" --argjson p1_deny "$p1_deny" --argjson pings "${sent:-0}" \
		--argjson p2_pass "$p2_pass" --argjson p2_drop "$p2_drop" --argjson growth "$growth_json" \
		'{minutes: $minutes, api_writes: $churn, nginx: {uid_soak_requests: $soak_sent, passed: $p1_pass, denied: $p1_deny},
		  xdp: {pings: $pings, passed: $p2_pass, dropped: $p2_drop}, memory_and_files: $growth,
		  failures: map(select(. != "")), ok: (map(select(. != "")) | length == 0)}'
else
	say "$minutes min: $churn_total API writes and reads answered ($(awk -v n="$churn_total" -v m="$minutes" 'BEGIN {printf "%.0f", n / m / 60}')/s)"
	say "nginx: $soak_sent requests as uid=soak, $p1_pass passed, $p1_deny denied (the clients saw the same)"
	say "XDP: $sent pings, policy 2 passed $p2_pass and dropped $p2_drop ($received replies)"
	while IFS='|' read -r who what a b grew; do
		say "  $who $what after warm-up, least sampled: first half $a, second half $b$([ "$grew" = 1 ] && echo ' (GREW)')"
	done <<<"$growth"
	for f in "${fails[@]}"; do echo "soak: FAIL: $f"; done
	[ ${#fails[@]} = 0 ] && say "ok"
fi
[ ${#fails[@]} = 0 ]
