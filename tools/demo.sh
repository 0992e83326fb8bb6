#!/usr/bin/env bash
# The demo behind `make demo`: a throwaway network namespace and veth pair,
# freqctl attached at XDP on the root side, traffic from the namespace before
# and after a ban, the counters that show what was dropped. Everything it
# makes (namespace, veth, pin dir, libxdp's state, store) is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (XDP, network namespaces)" >&2; exit 1; }

tag=$$
ns=fc-demo-$tag host=fcdemo$tag peer=fcdp$tag
pin=/sys/fs/bpf/fc-demo-$tag db=/tmp/fc-demo-$tag/store.db
# libxdp's state for the dispatcher attach makes (its pins, its lock), here
# rather than in the machine's /sys/fs/bpf/xdp.
export LIBXDP_BPFFS=/sys/fs/bpf/fc-demo-$tag-xdp
cleanup() {
	ip netns del "$ns" 2>/dev/null || true
	ip link del "$host" 2>/dev/null || true
	rm -rf "$pin" "$LIBXDP_BPFFS" "/tmp/fc-demo-$tag"
}
trap cleanup EXIT
mkdir -p "$LIBXDP_BPFFS"

fc() {
	echo "\$ freqctl $*"
	build/freqctl --db "$db" --pin-dir "$pin" --shm "/tmp/fc-demo-$tag/shm" "$@"
	echo
}
send() {
	echo "\$ ping -c 10 198.18.0.1   # from the namespace (198.18.0.2)"
	ip netns exec "$ns" ping -n -q -c 10 -i 0.05 -W 1 198.18.0.1 | grep 'packets transmitted' || true
	echo
}

echo "== a namespace (198.18.0.2) behind a veth pair; this host is 198.18.0.1 on $host"
ip netns add "$ns"
ip link add "$host" type veth peer name "$peer" netns "$ns"
ip addr add 198.18.0.1/24 dev "$host"
ip link set "$host" up
ip -n "$ns" addr add 198.18.0.2/24 dev "$peer"
ip -n "$ns" link set "$peer" up
echo

fc attach "$host"
send
fc ban add 198.18.0.2 --ttl 10m
fc ban add 2001:db8::/32
fc ban list
send
fc stats
fc status
fc ban del 198.18.0.2
send
fc detach "$host"
echo "== cleaning up: namespace, veth, pinned maps, store"
