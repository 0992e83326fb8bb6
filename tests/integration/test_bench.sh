#!/usr/bin/env bash
# fc_bench (make bench's XDP benchmark) run with tiny counts, so that the
# tool does not rot: it loads its store, runs every row and the flood, and
# reports the issue's verdicts and freqctl's shares, then leaves nothing
# behind. Its figures mean nothing at these counts and are not checked:
# benchmarks stay out of the pass/fail.
. "$(dirname "$0")/lib.sh"

bench=build/fc_bench
[ "$(id -u)" -eq 0 ] || skip_all "needs root (BPF, network namespaces)"
[ -x "$bench" ] || skip_all "$bench not built (make all-dev)"
command -v jq >/dev/null || skip_all "jq not installed"
out=/tmp/fc-it-$tag/bench.json
mkdir -p "/tmp/fc-it-$tag"

check "--help prints the usage to stdout, exit 0" sh -c "'$bench' --help | grep -q '^Usage: fc_bench'"
"$bench" --runs 0 2>/dev/null
check "--runs 0 is a usage error (exit 2)" [ $? -eq 2 ]

"$bench" --json --bans 200 --prefixes 20 --prefixes6 20 --policies 64 --samples 1 --repeat 50 --rounds 1 \
	--runs 2 --flood 500 --flood-bans 100 --freqctl "$FC_BIN" >"$out" 2>"$out.err" &
pid=$!
wait "$pid"
rc=$?
check "a tiny run exits 0 (stderr: $(tail -c 300 "$out.err" | tr '\n' ' '))" [ "$rc" -eq 0 ]
check "every row has freqctl's ns" jq_true '[.results[] | select(.program == "freqctl")] | length >= 18' "$out"
check "the three-policy row is measured" \
	jq_true '.results[] | select(.frame == "three policies: exact+prefix+ip=* (SYN)" and .ns_per_packet > 0)' "$out"
if command -v xdp-filter >/dev/null; then
	check "each row has a verdict against its target" \
		jq_true '[.targets[] | select(.verdict == "PASS" or .verdict == "MISSED")] | length >= 18' "$out"
	check "the flood compares with xdp-filter" \
		jq_true '.flood.results[] | select(.program == "freqctl, 100 bans" and .x_xdp_filter > 0)' "$out"
else
	skip_one "xdp-filter not installed (Debian xdp-tools): no verdicts, no flood comparison"
fi
# The main store's SYN flood: every packet is a ban, its own bucket or the overflow.
check "the flood's shares of the main store add up" jq_true '[.flood.results[] |
	select(.program == "freqctl, main store" and .sources == "any IPv4 source") | .share |
	.exact_ban + .prefix_ban + .own_bucket + .overflow_bucket + .allowed] | .[0] > 0.99' "$out"
check "the banned flood is all bans" jq_true '[.flood.results[] |
	select(.program == "freqctl, 100 bans" and .sources == "sources from the shared exact bans") |
	.share.exact_ban] | .[0] == 1' "$out"
check "nothing left behind (netns, pins, store)" \
	sh -c "! ip netns list | grep -q 'fc-bench-$pid\\b' && ! ls -d /sys/fs/bpf/fc-bench-$pid* /tmp/fc-bench-$pid* 2>/dev/null"
exit 0
