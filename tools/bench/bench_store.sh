#!/usr/bin/env bash
# Fills a store for the benchmarks: 65,535 policies (every other one ip=ADDR
# at XDP/TC, the others uid=VALUE in nginx; addresses in 198.18.0.0/16),
# 1,000,000 exact bans by hand (10.0.0.0 up) and the issue's prefixes:
# 100,000 IPv4 (/8 to /31, most /16 to /31, in 20.0.0.0 to 99.255.255.255;
# repeats drawn are one ban) and 10,000 IPv6 /64 (2001:db8:X:Y::/64),
# published to PIN_DIR and SHM.
#   tools/bench/bench_store.sh DB PIN_DIR SHM
set -euo pipefail
cd "$(dirname "$0")/../.."
# This machine's /etc/default/freqctl is not this script's: its options only.
export FREQCTL_CONFIG=
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
awk 'BEGIN {
	for (i = 0; i < 1000000; i++)
		printf "10.%d.%d.%d\n", int(i / 65536), int(i / 256) % 256, i % 256
	srand(13)
	for (i = 0; i < 100000; i++) {
		len = i % 1000 ? 16 + int(rand() * 16) : 8 + int(rand() * 8)
		a = (20 + int(rand() * 80)) * 16777216 + int(rand() * 16777216)
		a -= a % 2 ^ (32 - len)
		printf "%d.%d.%d.%d/%d\n", int(a / 16777216), int(a / 65536) % 256, int(a / 256) % 256, a % 256, len
	}
	for (i = 0; i < 10000; i++)
		printf "2001:db8:%x:%x::/64\n", int(i / 100), i % 100
}' >"$tmp/bans.txt"
t0=$(date +%s%N)
build/freqctl --db "$db" --pin-dir "$pin" --shm "$shm" import "$tmp/policies.json" >/dev/null
t1=$(date +%s%N)
build/freqctl --db "$db" --pin-dir "$pin" --shm "$shm" ban import "$tmp/bans.txt" >/dev/null
t2=$(date +%s%N)
echo "  store filled: 65,535 policies in $(((t1 - t0) / 1000000)) ms, 1,000,000 exact bans and 110,000 prefixes in" \
	"$(((t2 - t1) / 1000000)) ms"
