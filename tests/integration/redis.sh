# Real Redis for the integration suites: a standalone redis-server and a
# Cluster of 3 primaries + 3 replicas, started by the suite in its own
# directory and ended by their pids however the suite ends. Source it after
# lib.sh; call redis_cleanup from the EXIT trap.
#
# Ports are the suite's block's (lib.sh's FC_BLOCK): 16000 + 8 * FC_BLOCK + k,
# k = 0 the standalone server, 1-6 the Cluster, 7 free for a fake server
# (redis_port 7). The Cluster's bus ports are the default +10000, so every
# port stays below the ephemeral range (32768-).
#
# Every server writes its AOF with appendfsync always: a standalone server
# is exact for fleet limits only so (doc/fleet.md), and a restarted one
# comes back with what it acknowledged.
#
#   redis_missing                 why Redis can not run here, or nothing
#   redis_standalone [ARG...]     starts it; sets redis_url (redis://127.0.0.1:PORT)
#   redis_cluster                 starts six, creates the Cluster, waits for
#                                 cluster_state:ok and the replicas; sets
#                                 redis_cluster_url (all six, comma-separated)
#   redis_kill PORT [SIGNAL]      ends one server (TERM), by its pid
#   redis_restart PORT            starts it again with what it had (its AOF, nodes.conf)
#   rcli ARG...                   redis-cli bounded in time (10 s)
# shellcheck shell=bash

redis_dir=/tmp/fc-it-$tag/redis
redis_url= redis_cluster_url=
redis_cluster_ports=()

redis_port() { echo $((16000 + FC_BLOCK * 8 + $1)); }

redis_missing() {
	local b
	for b in redis-server redis-cli; do
		command -v "$b" >/dev/null || { echo "$b not installed (Debian redis-server and redis-tools)"; return; }
	done
}

rcli() { timeout 10 redis-cli "$@"; }

# The pid in PORT.pid, if it is still that redis-server.
redis_pid() {
	local pid
	pid=$(cat "$redis_dir/$1.pid" 2>/dev/null) || return 1
	grep -qa redis-server "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

redis_kill() { # redis_kill PORT [SIGNAL]
	local pid n
	pid=$(redis_pid "$1") || return 0
	kill -"${2:-TERM}" "$pid" 2>/dev/null
	for n in $(seq 50); do
		redis_pid "$1" >/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
}

redis_cleanup() {
	local f
	for f in "$redis_dir"/*.pid; do
		[ -f "$f" ] || continue
		f=${f##*/}
		redis_kill "${f%.pid}"
	done
}

# The arguments each server was started with, kept for redis_restart.
declare -A redis_args=()

redis_run() { # redis_run PORT: starts it (not daemonized: its pid is known at once), answering within 5 s
	local port=$1
	mkdir -p "$redis_dir/$port"
	# shellcheck disable=SC2086 # the arguments, as given
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync always \
		--dir "$redis_dir/$port" --logfile "$redis_dir/$port/log" ${redis_args[$port]} </dev/null >/dev/null 2>&1 &
	echo $! >"$redis_dir/$port.pid"
	# Disowned: bash says nothing when a test kills one.
	disown
	for _ in $(seq 50); do
		rcli -p "$port" ping 2>&1 | grep -qE 'PONG|NOAUTH' && return 0
		sleep 0.1
	done
	echo "# redis-server on $port does not answer: $(tail -3 "$redis_dir/$port/log" 2>/dev/null)"
	return 1
}

redis_start() { # redis_start PORT [ARG...]
	local port=$1
	shift
	[ -z "$(ss -Hltn "sport = :$port")" ] || { echo "# port $port is in use"; return 1; }
	redis_args[$port]="$*"
	mkdir -p "$redis_dir"
	chmod 700 "$redis_dir"
	redis_run "$port"
}

redis_restart() { redis_run "$1"; }

redis_standalone() {
	redis_start "$(redis_port 0)" "$@" || return 1
	redis_url=redis://127.0.0.1:$(redis_port 0)
}

# Every node says cluster_state:ok and its CLUSTER SLOTS names all six (a
# replica is named once it is in sync).
redis_cluster_ok() {
	local p want
	want=$(printf '%s\n' "${redis_cluster_ports[@]}" | sort)
	for p in "${redis_cluster_ports[@]}"; do
		rcli -p "$p" cluster info | grep -q '^cluster_state:ok' || return 1
		[ "$(rcli -p "$p" cluster slots | grep -xE "$(IFS='|'; echo "${redis_cluster_ports[*]}")" | sort -u)" = "$want" ] ||
			return 1
	done
}

redis_cluster() {
	local k p addrs=() urls=()
	redis_cluster_ports=()
	for k in 1 2 3 4 5 6; do
		p=$(redis_port "$k")
		redis_cluster_ports+=("$p")
		# require-full-coverage no: a primary lost stops its slots, not all of them.
		redis_start "$p" --cluster-enabled yes --cluster-config-file "$redis_dir/$p/nodes.conf" \
			--cluster-node-timeout 1000 --cluster-require-full-coverage no || return 1
		addrs+=("127.0.0.1:$p")
		urls+=("redis://127.0.0.1:$p")
	done
	timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
		>"$redis_dir/create.log" 2>&1 || { sed 's/^/# /' "$redis_dir/create.log"; return 1; }
	wait_until 30 redis_cluster_ok || { echo "# the Cluster is not whole after 30 s"; return 1; }
	redis_cluster_url=$(IFS=,; echo "${urls[*]}")
}

# The port of the primary that holds KEY's slot now.
redis_primary_of() { # redis_primary_of KEY
	local slot
	slot=$(rcli -p "${redis_cluster_ports[0]}" cluster keyslot "$1") || return 1
	rcli -p "${redis_cluster_ports[0]}" --json cluster slots 2>/dev/null |
		jq -r --argjson s "$slot" '.[] | select(.[0] <= $s and $s <= .[1]) | .[2][1]'
}
