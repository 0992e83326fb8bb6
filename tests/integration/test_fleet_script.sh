#!/usr/bin/env bash
# The fleet's script (loader/agent/fc_fleet_sync.lua) and the agent's calls
# of it, against a real standalone redis-server started here on this
# suite's port (16000 + 8 FC_BLOCK: below the ephemeral range; a Cluster's
# bus at +10000 would stay below 32768) and ended by its pid however the
# test ends; the cases are tests/integration/fc_fleet_script_it.c.
. "$(dirname "$0")/lib.sh"

command -v redis-server >/dev/null || skip_all "redis-server not installed (Debian redis-server)"
[ -x build/tests/fc_fleet_script_it ] || skip_all "build/tests/fc_fleet_script_it not built (make all-dev)"
ldconfig -p | grep -q 'libhiredis\.so\.0\.14 ' || skip_all "libhiredis0.14 not installed"

rdir=/tmp/fc-it-$tag/redis
port=$((16000 + 8 * FC_BLOCK))
mkdir -p "$rdir"
chmod 700 "$rdir"
[ -z "$(ss -Htan "sport = :$port")" ] || skip_all "port $port is in use"
redis_pid=
redis_stop() {
	local n
	[ -n "$redis_pid" ] || return 0
	grep -qa redis-server "/proc/$redis_pid/cmdline" 2>/dev/null && kill "$redis_pid"
	for n in $(seq 50); do
		grep -qa redis-server "/proc/$redis_pid/cmdline" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$redis_pid" 2>/dev/null
}
trap 'redis_stop; fc_finish' EXIT

redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$rdir" \
	--logfile "$rdir/log" </dev/null >/dev/null 2>&1 &
redis_pid=$!
disown
for _ in $(seq 50); do
	timeout 5 redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
	sleep 0.1
done
check "redis-server on 127.0.0.1:$port" eval 'timeout 5 redis-cli -p "$port" ping | grep -q PONG'

FC_FLEET_IT_REDIS=127.0.0.1:$port CMOCKA_MESSAGE_OUTPUT=TAP timeout 120 build/tests/fc_fleet_script_it \
	>"$rdir/it.log" 2>&1
it_rc=$?
tap_relay < <(sed -E 's/^(not )?ok [0-9]+ - /\1ok - /' "$rdir/it.log")
check "fc_fleet_script_it ended by itself, every case passed (exit $it_rc)" [ "$it_rc" = 0 ]
