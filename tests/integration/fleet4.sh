# A fleet of four on one machine, for the fleet-policy suites (design §12):
# one PostgreSQL store (pg.sh) and Redis (redis.sh) of the suite's own, and
# four nodes n1..n4, each with its own nginx (port fc_port 1..4), shm
# ($dir/nI.shm), pin dir, --node and agent of weight 0.25 on Redis.
# Everything is started here and ended by its pid however the suite ends.
# Source it after lib.sh; call fleet_up, and fleet_down from the EXIT trap
# (fleet_suite sets the trap).
#
#   fleet_suite                     skips without root, nginx, PostgreSQL, Redis, jq; sets the trap
#   fleet_up REDIS_URL              the store, four nginx, four agents; waits until each syncs with
#                                   Redis and has heard all four (fleet_all_in_set, once a fleet
#                                   policy's window began after: all four in fleet mode and in the set)
#   fleet_fc NODE ARG...            freqctl as node NODE (n1..n4), on the fleet's store and Redis
#   op ARG...                       freqctl as an operator (no node of the fleet), stdout discarded
#   fleet_agent_start NODE [ARG...] (re)starts NODE's agent, extra agent options after
#   fleet_agent_stop NODE           ends it (TERM, by its pid)
#   fleet_mode NODE                 the mode its agent reports: fleet, degraded or off
#   fleet_send LIST                 one curl over the URLs in LIST (a file, one a line), 8 at a time;
#                                   prints "STATUS URL SECONDS" a line, in completion order
#   fleet_url NODE PATH             NODE's nginx's URL of PATH
#   fleet_next_window UNIT_S MARGIN waits for the start of a window of UNIT_S seconds (60: the next
#                                   minute) and until MARGIN seconds into it
#
# Windows: fixed windows are aligned to UTC, and a node takes no share of a
# window that began before its state file was made or before it joined the
# node set (design §5.5, §1: FC_FLEET_NODE_DELAY_MS). A fleet made by a
# test is therefore new for the day's, the hour's and the current minute's
# windows; the suites use per-minute policies and start after the next
# minute boundary (fleet_next_window), where every node holds its share.
# shellcheck shell=bash
# shellcheck source=tests/integration/pg.sh
. tests/integration/pg.sh
# shellcheck source=tests/integration/redis.sh
. tests/integration/redis.sh

dir=/tmp/fc-it-$tag # fc_finish removes it
fleet_nodes=(n1 n2 n3 n4)
fleet_redis=
fleet_sync_ms=${FLEET_SYNC_MS:-100}
declare -A fleet_apid=()

fleet_down() {
	local n
	for n in "${fleet_nodes[@]}"; do
		fleet_agent_stop "$n"
		FC_NGX_DIR=$dir/$n fc_nginx_stop
		rm -rf "/sys/fs/bpf/fc-it-$tag-$n"
	done
	rm -rf "/sys/fs/bpf/fc-it-$tag-op"
	redis_cleanup
	pg_cleanup
	fc_finish
}

# fleet_no_refusals: no node's agent refused a reply (reply_errors 0 on
# each): a grant the script made is never taken for one written outside
# freqctl.
fleet_no_refusals() {
	local n
	for n in "${fleet_nodes[@]}"; do
		jq_true '.counters.reply_errors == 0' "$dir/$n.shm.fleet.json" || {
			echo "# $n: $(jq -c .counters "$dir/$n.shm.fleet.json")"
			return 1
		}
	done
}

fleet_suite() {
	local why
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (bpffs for the pin dirs, nginx workers as www-data)"
	why=$(fc_nginx_missing)
	[ -z "$why" ] || skip_all "$why"
	why=$(pg_missing)
	[ -z "$why" ] || skip_all "$why"
	why=$(redis_missing)
	[ -z "$why" ] || skip_all "$why"
	command -v jq >/dev/null || skip_all "jq not installed"
	getent group www-data >/dev/null || skip_all "no www-data group for the workers"
	[ -x "$FC_BIN" ] || skip_all "$FC_BIN not built (make)"
	trap fleet_down EXIT
	mkdir -p "$dir"
}

fleet_fc() { # fleet_fc NODE ARG...
	local n=$1
	shift
	"$FC_BIN" --db "$pg_dsn" --node "$n" --pin-dir "/sys/fs/bpf/fc-it-$tag-$n" --shm "$dir/$n.shm" \
		${fleet_redis:+--redis "$fleet_redis"} "$@"
}
op() { "$FC_BIN" --db "$pg_dsn" --pin-dir "/sys/fs/bpf/fc-it-$tag-op" --shm "$dir/op.shm" "$@" >/dev/null; }

fleet_port() { fc_port "${1#n}"; }
fleet_url() { echo "http://127.0.0.1:$(fleet_port "$1")$2"; }

fleet_agent_start() { # fleet_agent_start NODE [AGENT ARG...]
	local n=$1
	shift
	# Not through a function: $! must be the agent's own pid.
	"$FC_BIN" --db "$pg_dsn" --node "$n" --pin-dir "/sys/fs/bpf/fc-it-$tag-$n" --shm "$dir/$n.shm" \
		--redis "$fleet_redis" agent --weight 0.25 --sync-interval "$fleet_sync_ms" "$@" >>"$dir/$n.log" 2>&1 &
	fleet_apid[$n]=$!
}

fleet_agent_stop() {
	local pid=${fleet_apid[$1]:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	fleet_apid[$1]=
}

fleet_mode() { jq -r '.mode' "$dir/$1.shm.fleet.json" 2>/dev/null; }

# NODE's agent syncs with Redis (mode fleet, or off while there is no
# fleet policy) and has heard all four nodes' heartbeats.
fleet_ready() {
	jq -e '.mode != "degraded" and .rounds > 0 and ([.nodes[]?.name] | length) == 4' "$dir/$1.shm.fleet.json" \
		>/dev/null 2>&1
}
# CHECK holds for every node.
fleet_all() { # fleet_all CHECK
	local n
	for n in "${fleet_nodes[@]}"; do "$1" "$n" || return 1; done
}
fleet_all_ready() { fleet_all fleet_ready; }
# Every agent is in fleet mode with all four nodes in the node set of its
# first fleet policy's current window (once there is a fleet policy, and
# its window began after the nodes joined: fleet_next_window).
fleet_in_set() {
	jq -e '.mode == "fleet" and ([.nodes[]? | select(.in_set)] | length) == 4' "$dir/$1.shm.fleet.json" \
		>/dev/null 2>&1
}
fleet_all_in_set() { fleet_all fleet_in_set; }

fleet_up() { # fleet_up REDIS_URL
	local n
	fleet_redis=$1
	pg_start "$dir/pg" || { echo "# PostgreSQL does not start: $(tail -3 "$dir/pg/log" 2>/dev/null)"; return 1; }
	for n in "${fleet_nodes[@]}"; do
		# node set makes the store (sync and listings refuse a missing one).
		fleet_fc "$n" node set "$n" 0.25 >/dev/null && fleet_fc "$n" sync >/dev/null || return 1
		FC_NGX_DIR=$dir/$n FC_NGX_SHM=$dir/$n.shm fc_nginx_start "127.0.0.1:$(fleet_port "$n")" || return 1
		fleet_agent_start "$n"
	done
	if ! wait_until 30 fleet_ready_or_dead || ! fleet_all_ready; then
		for n in "${fleet_nodes[@]}"; do echo "# $n: $(tail -3 "$dir/$n.log")"; done
		return 1
	fi
}
# Every agent is ready, or one has ended: no use waiting for it.
fleet_ready_or_dead() {
	local n
	for n in "${fleet_nodes[@]}"; do kill -0 "${fleet_apid[$n]}" 2>/dev/null || return 0; done
	fleet_all_ready
}

fleet_send() { # fleet_send LIST
	local cfg=$dir/curl.$RANDOM
	sed 's/.*/url = "&"\noutput = "\/dev\/null"/' "$1" >"$cfg"
	timeout 120 curl -s --parallel --parallel-max 8 -w '%{http_code} %{url_effective} %{time_total}\n' --config "$cfg"
	rm -f "$cfg"
}

# The 99th percentile of the times of fleet_send's output OUT, in ms.
fleet_p99_ms() { awk '{ print $3 * 1000 }' "$1" | sort -n | awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; printf "%d\n", v[i] }'; }
# How many requests of OUT passed on NODE.
fleet_passed_on() { grep -c "^200 http://127.0.0.1:$(fleet_port "$2")/" "$1"; }
# Waits up to K of NODE's rounds until its agent reports MODE.
fleet_mode_within() { # fleet_mode_within NODE MODE K
	for _ in $(seq "$3"); do
		[ "$(fleet_mode "$1")" = "$2" ] && return 0
		fleet_wait_rounds "$1" 1 2>/dev/null || sleep 1
	done
	[ "$(fleet_mode "$1")" = "$2" ]
}
fleet_all_mode_within() { # fleet_all_mode_within MODE K
	local n
	for n in "${fleet_nodes[@]}"; do fleet_mode_within "$n" "$1" "$2" || return 1; done
}

fleet_next_window() { # fleet_next_window UNIT_S MARGIN
	local now
	now=$(date +%s)
	sleep $(($1 - now % $1))
	sleep "$2"
}
