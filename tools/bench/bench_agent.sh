#!/usr/bin/env bash
# make bench, the agent: runs an agent on a scratch store, pin dir and shm,
# and fc_agent_bench against it (200 changes), on an empty store and then on
# one of 1,000,000 exact bans, 110,000 prefixes and 65,535 policies (tools/bench/bench_store.sh), the two
# side by side; first on SQLite, then on a PostgreSQL cluster of its own
# (tests/integration/pg.sh) when this machine has the server. The agents and
# the cluster are stopped by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
# This machine's /etc/default/freqctl is not this script's: its options only.
export FREQCTL_CONFIG=
tag=$$
dir=/tmp/fc-abench-$tag
pin=/sys/fs/bpf/fc-abench-$tag
shm=/dev/shm/fc-abench-$tag
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
	rm -rf "$dir" "$pin" "$shm" "$shm.state" "$shm.agent.lock"
}
trap cleanup EXIT

bench() { # bench DB WHAT
	build/freqctl --db "$1" --pin-dir "$pin" --shm "$shm" sync >/dev/null
	build/freqctl --db "$1" --pin-dir "$pin" --shm "$shm" agent --quiet 2>"$dir/agent.log" &
	apid=$!
	for _ in $(seq 300); do grep -q 'watching store' "$dir/agent.log" && break; sleep 0.1; done
	build/fc_agent_bench "$1" "$pin" "$shm" 200 "$2"
	stop_agent
}

both() { # both DB: an empty store, then a full one
	rm -rf "$pin" "$shm" "$shm.state"
	bench "$1" "nothing"
	echo
	tools/bench/bench_store.sh "$1" "$pin" "$shm"
	# PostgreSQL: statistics for the planner, and no autovacuum of the bulk load meanwhile.
	[ "$1" != "$pg_dsn" ] || pg_sql freqctl "VACUUM ANALYZE"
	bench "$1" "1M bans, 110,000 prefixes, 65,535 policies"
}

both "$dir/store.db"
why=$(pg_missing)
if [ -n "$why" ]; then
	echo "agent, PostgreSQL store: SKIPPED ($why)"
	exit 0
fi
pg_start "$dir/pg"
echo
both "$pg_dsn"
