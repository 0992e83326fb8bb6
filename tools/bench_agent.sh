#!/usr/bin/env bash
# make bench, the agent: runs an agent on a scratch store, pin dir and shm,
# and fc_agent_bench against it (200 changes); first on SQLite, then on a
# PostgreSQL cluster of its own (tests/integration/pg.sh) when this machine
# has the server. The agents and the cluster are stopped by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=$$
dir=/tmp/fc-abench-$tag
pin=/sys/fs/bpf/fc-abench-$tag
mkdir -p "$dir"
apid=
# shellcheck source=tests/integration/pg.sh
. tests/integration/pg.sh
stop_agent() {
	[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null || true
	apid=
}
cleanup() {
	stop_agent
	pg_cleanup
	rm -rf "$dir" "$pin"
}
trap cleanup EXIT

bench() { # bench DB
	rm -rf "$pin" "$dir/shm"
	build/freqctl --db "$1" --pin-dir "$pin" --shm "$dir/shm" sync >/dev/null
	build/freqctl --db "$1" --pin-dir "$pin" --shm "$dir/shm" agent --quiet 2>"$dir/agent.log" &
	apid=$!
	sleep 0.5
	build/fc_agent_bench "$1" "$pin" "$dir/shm" 200
	stop_agent
}

bench "$dir/store.db"
why=$(pg_missing)
if [ -n "$why" ]; then
	echo "agent, PostgreSQL store: SKIPPED ($why)"
	exit 0
fi
pg_start "$dir/pg"
echo
bench "$pg_dsn"
