# Shared by the integration tests: a network namespace and a veth pair made
# by the test, freqctl on the root side, helpers to send pings from the
# namespace and to read counters. Everything made here is removed on exit,
# also when a step fails. Source it, then call fc_setup.
# shellcheck shell=bash
set -u
cd "$(dirname "$0")/../.."
FC_BIN=${FC_BIN:-build/freqctl}

tag=$$
ns=fc-it-$tag
host=fcit$tag # root side, where freqctl attaches
peer=fcip$tag # namespace side, the sender
pin=/sys/fs/bpf/fc-it-$tag
db=/tmp/fc-it-$tag/store.db
shm=/tmp/fc-it-$tag/shm # never the default: a real freqctl may be using it
passed=0 failed=0 skipped=0

fc_finish() {
	ip netns del "$ns" 2>/dev/null
	ip link del "$host" 2>/dev/null
	rm -rf "$pin" "/tmp/fc-it-$tag"
	echo "$passed passed, $failed failed, $skipped skipped"
}
trap fc_finish EXIT
trap 'exit 1' INT TERM

skip_all() {
	echo "SKIPPED: $1"
	skipped=1
	exit 0
}

check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok - $what"
	else
		failed=$((failed + 1))
		echo "not ok - $what"
		return 1
	fi
}

fc() { "$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" "$@"; }

# jq_true FILTER [FILE]: the JSON (FILE or stdin) satisfies FILTER.
jq_true() { jq -e "$@" >/dev/null; }

# Debian's nginx with the built module, reading $shm, the user id from
# ?uid=, one worker, its files under /tmp/fc-it-$tag; FC_NGX_HTTP adds
# directives to its http block, FC_NGX_ACCESS_LOG replaces "access_log off". fc_nginx_stop ends it by its pid (call it
# from the EXIT trap).
MODULE=${FC_NGX_MODULE:-$PWD/build/ngx_http_freqctl_module.so}
fc_nginx_missing() {
	command -v nginx >/dev/null || { echo "nginx not installed (Debian nginx)"; return; }
	command -v curl >/dev/null || { echo "curl not installed"; return; }
	[ -f "$MODULE" ] || echo "$MODULE not built (make)"
}
fc_nginx_start() { # fc_nginx_start ADDR:PORT
	local d=/tmp/fc-it-$tag
	mkdir -p "$d/html" "$d/logs"
	echo ok >"$d/html/index.html"
	chmod -R a+rX "$d"
	[ -e "$shm" ] || fc sync >/dev/null
	chgrp www-data "$shm" 2>/dev/null
	cat >"$d/nginx.conf" <<CONF
load_module $MODULE;
user www-data www-data;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log notice;
events { worker_connections 64; }
http {
    ${FC_NGX_ACCESS_LOG:-access_log off;}
    freqctl_shm $shm;
    freqctl on;
    freqctl_uid \$arg_uid;
    ${FC_NGX_HTTP:-}
    server { listen $1; root $d/html; }
}
CONF
	nginx -p "$d" -c "$d/nginx.conf" -e "$d/logs/error.log" || return 1
	for _ in $(seq 50); do [ -f "$d/nginx.pid" ] && return 0; sleep 0.1; done
	return 1
}
fc_nginx_stop() {
	local pid f=/tmp/fc-it-$tag/nginx.pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	kill -QUIT "$pid" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
}

# Pings the root side from the namespace, COUNT at INTERVAL seconds; prints
# how many replies came back.
pings() { # pings 4|6 COUNT [INTERVAL]
	local dst=198.18.0.1
	[ "$1" = 6 ] && dst=2001:2::1
	ip netns exec "$ns" ping -"$1" -n -q -c "$2" -i "${3:-0.05}" -W 1 "$dst" 2>/dev/null |
		sed -n 's/.* \([0-9]*\) received.*/\1/p'
}

# The packet count of a counter of `freqctl stats --json`: a top-level name,
# or "policy ID passed|dropped|would_drop".
counter() {
	if [ "$1" = policy ]; then
		fc stats --json | jq ".policies[] | select(.id == $2) | .$3.packets"
	else
		fc stats --json | jq ".$1.packets"
	fi
}

# Waits until at least N seconds remain in this UTC minute: fixed windows
# are aligned to UTC, and a test must not straddle one.
away_from_minute_edge() {
	while [ $((60 - $(date +%s) % 60)) -lt "$1" ]; do sleep 0.2; done
}

fc_setup() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces, XDP)"
	command -v ping >/dev/null || skip_all "ping not installed (Debian iputils-ping)"
	[ -x "$FC_BIN" ] || skip_all "$FC_BIN not built"
	set -e
	ip netns add "$ns"
	ip link add "$host" type veth peer name "$peer" netns "$ns"
	ip addr add 198.18.0.1/24 dev "$host"
	ip -6 addr add 2001:2::1/64 dev "$host" nodad
	ip link set "$host" up
	ip -n "$ns" addr add 198.18.0.2/24 dev "$peer"
	ip -n "$ns" -6 addr add 2001:2::2/64 dev "$peer" nodad
	ip -n "$ns" link set "$peer" up
	ip -n "$ns" link set lo up
	# Static neighbours: no ARP or neighbour discovery of the kernel's own
	# choosing, so every IP packet from the namespace is one the test sent.
	ip -n "$ns" neigh replace 198.18.0.1 lladdr "$(cat /sys/class/net/"$host"/address)" dev "$peer" nud permanent
	ip -n "$ns" neigh replace 2001:2::1 lladdr "$(cat /sys/class/net/"$host"/address)" dev "$peer" nud permanent
	ip neigh replace 198.18.0.2 lladdr "$(ip netns exec "$ns" cat /sys/class/net/"$peer"/address)" dev "$host" nud permanent
	ip neigh replace 2001:2::2 lladdr "$(ip netns exec "$ns" cat /sys/class/net/"$peer"/address)" dev "$host" nud permanent
	set +e
}
