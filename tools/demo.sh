#!/usr/bin/env bash
# The demo behind `make demo`: a throwaway network namespace and veth pair,
# freqctl attached at XDP on the root side; traffic from the namespace before
# and after a ban, then under a rate limit at XDP, then HTTP requests to a
# real nginx under a per-user limit; the counters that show what was dropped
# or refused. Everything it makes (namespace, veth, pin dir, libxdp's state,
# store, nginx) is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
# This machine's /etc/default/freqctl is not this script's: its options only.
export FREQCTL_CONFIG=

[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (XDP, network namespaces)" >&2; exit 1; }

tag=$$
ns=fc-demo-$tag host=fcdemo$tag peer=fcdp$tag
dir=/tmp/fc-demo-$tag
pin=/sys/fs/bpf/fc-demo-$tag db=$dir/store.db shm=$dir/shm
# libxdp's state for the dispatcher attach makes (its pins, its lock), here
# rather than in the machine's /sys/fs/bpf/xdp.
export LIBXDP_BPFFS=/sys/fs/bpf/fc-demo-$tag-xdp
cleanup() {
	[ -f "$dir/nginx.pid" ] && kill -QUIT "$(cat "$dir/nginx.pid")" 2>/dev/null
	for _ in $(seq 50); do [ -f "$dir/nginx.pid" ] || break; sleep 0.1; done
	ip netns del "$ns" 2>/dev/null || true
	ip link del "$host" 2>/dev/null || true
	rm -rf "$pin" "$LIBXDP_BPFFS" "$dir"
}
trap cleanup EXIT
mkdir -p "$LIBXDP_BPFFS"

fc() {
	echo "\$ freqctl $*"
	build/freqctl --db "$db" --pin-dir "$pin" --shm "$shm" "$@"
	echo
}
send() { # send [COUNT [INTERVAL]]
	echo "\$ ping -c ${1:-10} -i ${2:-0.05} 198.18.0.1   # from the namespace (198.18.0.2)"
	ip netns exec "$ns" ping -n -q -c "${1:-10}" -i "${2:-0.05}" -W 1 198.18.0.1 | grep 'packets transmitted' || true
	echo
}
get() { # get UID COUNT: COUNT requests as that user, from the namespace
	local codes="" i
	for i in $(seq "$2"); do
		codes="$codes $(ip netns exec "$ns" curl -s -o /dev/null -w '%{http_code}' "http://198.18.0.1:8080/?uid=$1")"
	done
	echo "\$ curl http://198.18.0.1:8080/?uid=$1   # $2 times:$codes"
}
nginx_start() {
	mkdir -p "$dir/html" "$dir/logs"
	echo hello >"$dir/html/index.html"
	chmod a+x "$dir" && chmod -R a+rX "$dir/html" # the workers read the page, not the store
	cat >"$dir/nginx.conf" <<CONF
load_module $PWD/build/ngx_http_freqctl_module.so;
user www-data www-data;
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    freqctl_shm $shm;          # what freqctl publishes
    freqctl on;
    freqctl_uid \$arg_uid;      # the user id: here ?uid=, in real life a cookie or a header
    server { listen 198.18.0.1:8080; root $dir/html; }
}
CONF
	echo "== nginx with the module on 198.18.0.1:8080 (serving a file, two workers)"
	sed -n '/freqctl/p' "$dir/nginx.conf" | sed 's/^ */    /'
	nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log"
	for _ in $(seq 50); do [ -f "$dir/nginx.pid" ] && break; sleep 0.1; done
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

echo "== a rate limit at XDP: 10 packets/s from this address, bursts of 5; a flood of 50 in half a second"
fc policy add 1 --match ip=198.18.0.2 --rate 10/s --burst 5
send 50 0.01
fc stats
fc policy del 1

echo "== a per-user limit in nginx: each user 3 requests a minute (limit_req would need a zone per key"
echo "   and a reload to change it; here it is one command, exact across nginx's workers)"
fc policy add 2 --match 'uid=*' --rate 3/m
nginx_start
get alice 5
get bob 5
echo
fc keys 2
fc policy set 2 --match 'uid=*' --rate 10/m
echo "(raised to 10/m without a reload or a restart; the buckets of alice and bob are kept as they were)"
get carol 12
echo
fc detach "$host"
echo "== cleaning up: nginx, namespace, veth, pinned maps, store"
