#!/usr/bin/env bash
# A node of weight 0.25 (freqctl node set): nginx enforces a quarter of each
# policy's rate, burst and --concurrency cap, and freqctl keys, top and
# stats, read on that node, say what nginx enforces rather than the whole
# policy.
# A real nginx serving files (slow ones for the cap), stopped by its pid on
# exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag
node=fc-it-weight-$tag # this suite's node: every command publishes and reads as it
fcn() { fc --node "$node" "$@"; }
fcnq() { quiet fcn "$@"; }
mkdir -p "$d/html/slow"
head -c 32768 /dev/zero | tr '\0' s >"$d/html/slow/f"

fcnq node set "$node" 0.25
FC_NGX_SERVER="location /slow/ { limit_rate 16k; }" fc_nginx_start "127.0.0.1:$(fc_port)" ||
	skip_all "nginx did not start"

# GCRA 20/m, burst 20, is 5/m with a burst of 5 here.
fcnq policy add 1 --match 'uid=*' --rate 20/m
check "uid=* 20/m at weight 0.25: nginx lets 5 of a uid through, then refuses" \
	[ "$(codes 7 '/?uid=w1')" = "200 200 200 200 200 429 429" ]
hdrs=$(curl -s -D - -o /dev/null "$ngx_url/?uid=w1" | tr -d '\r')
check "... and says so: RateLimit-Policy q=5" grep -qx 'RateLimit-Policy: "p1";q=5;w=60' <<<"$hdrs"
check "another uid: 2 of its 5" [ "$(codes 2 '/?uid=w2')" = "200 200" ]
keys=$(fcn keys 1 --json)
check "freqctl keys 1: w1 has 0 left (5 passed, 3 denied), w2 3 (of 5, not of 20)" \
	jq_true '.[0].passed == 5 and .[0].denied == 3 and .[0].remaining == 0 and
		.[1].passed == 2 and .[1].denied == 0 and .[1].remaining == 3' <<<"$keys"
top=$(timeout 20 "$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" --node "$node" top -n 1 -d 0.1 --json)
check "freqctl top: w1 uses all of its bucket, w2 two fifths" \
	jq_true '.keys[0].used >= 0.9 and .keys[0].passed == 5 and .keys[1].used > 0.3 and .keys[1].used <= 0.4' <<<"$top"
check "... and nginx lets exactly those 3 of w2 through" [ "$(codes 4 '/?uid=w2')" = "200 200 200 429" ]
fcnq policy del 1

# --concurrency 8 is 2 in flight here.
fcnq policy add 2 --match uid=c --concurrency 8
pids=()
: >"$d/four"
for _ in 1 2 3 4; do
	curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "$ngx_url/slow/f?uid=c" >>"$d/four" &
	pids+=($!)
done
inflight() { fcn stats --json | jq '.policies[] | select(.id == 2) | .concurrency.inflight'; }
for _ in $(seq 40); do [ "$(inflight)" = 2 ] && break; sleep 0.05; done
stats=$(fcn stats --json)
check "--concurrency 8 at weight 0.25: stats says 2 in flight of a cap of 2" \
	jq_true '.policies[] | select(.id == 2) | .concurrency.limit == 2 and .concurrency.inflight == 2' <<<"$stats"
check "... in text too (IN-FLIGHT 2/2)" sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' --node '$node' stats |
	grep -qE '^2 +uid=c +nginx +drop .* 2/2 +[0-9]+\$'"
check "... and Prometheus: freqctl_policy_concurrency_limit 2" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' --node '$node' stats --prometheus |
		grep -qx 'freqctl_policy_concurrency_limit{policy=\"2\",match=\"uid=c\"} 2'"
wait "${pids[@]}"
check "... and nginx let 2 of the 4 slow requests in, refusing 2 ($(sort "$d/four" | tr '\n' ' '))" \
	[ "$(sort "$d/four" | tr '\n' ' ')" = "200 200 429 429 " ]
check "stats at the default node (weight 1 there) says the whole cap" \
	jq_true '.policies[] | select(.id == 2) | .concurrency.limit == 8' <<<"$(fc stats --json)"
check "no worker crashed" sh -c "! grep -q 'exited on signal' '$d/logs/error.log'"
exit 0
