#!/usr/bin/env bash
# Fills a store for the benchmarks: 65,535 policies (every other one ip=ADDR
# at XDP/TC, the others uid=VALUE in nginx; addresses in 198.18.0.0/16) and
# 1,000,000 bans by hand (10.0.0.0 up), published to PIN_DIR and SHM.
#   tools/bench_store.sh DB PIN_DIR SHM
set -euo pipefail
cd "$(dirname "$0")/.."
db=$1 pin=$2 shm=$3
tmp=$(mktemp -d /tmp/fc-bstore-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
awk 'BEGIN {
	printf "{\"freqctl\": 2, \"bans\": [], \"sets\": [], \"nodes\": [], \"policies\": ["
	for (i = 0; i < 65535; i++) {
		m = i % 2 ? sprintf("uid=user%d", i) : sprintf("ip=198.18.%d.%d", int(i / 256) % 256, i % 256)
		printf "%s{\"id\": %d, \"match\": \"%s\", \"rates\": [\"10/s\"]}", i ? ", " : "", i + 1, m
	}
	print "]}"
}' >"$tmp/policies.json"
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "10.%d.%d.%d\n", int(i / 65536), int(i / 256) % 256, i % 256 }' \
	>"$tmp/bans.txt"
t0=$(date +%s%N)
build/freqctl --db "$db" --pin-dir "$pin" --shm "$shm" import "$tmp/policies.json" >/dev/null
t1=$(date +%s%N)
build/freqctl --db "$db" --pin-dir "$pin" --shm "$shm" ban import "$tmp/bans.txt" >/dev/null
t2=$(date +%s%N)
echo "  store filled: 65,535 policies in $(((t1 - t0) / 1000000)) ms, 1,000,000 bans in $(((t2 - t1) / 1000000)) ms"
