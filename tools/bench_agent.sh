#!/usr/bin/env bash
# make bench, the agent: runs an agent on a scratch store, pin dir and shm,
# and fc_agent_bench against it (200 changes). The agent is stopped by pid.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=$$
dir=/tmp/fc-abench-$tag
pin=/sys/fs/bpf/fc-abench-$tag
mkdir -p "$dir"
apid=
cleanup() {
	[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null || true
	rm -rf "$dir" "$pin"
}
trap cleanup EXIT
build/freqctl --db "$dir/store.db" --pin-dir "$pin" --shm "$dir/shm" sync >/dev/null
build/freqctl --db "$dir/store.db" --pin-dir "$pin" --shm "$dir/shm" agent --quiet 2>"$dir/agent.log" &
apid=$!
sleep 0.5
build/fc_agent_bench "$dir/store.db" "$pin" "$dir/shm" 200
