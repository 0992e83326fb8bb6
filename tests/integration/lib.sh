# Shared by the integration tests: a network namespace and a veth pair made
# by the test, freqctl on the root side, helpers to send pings from the
# namespace and to read counters, a real nginx. Everything made here is
# removed on exit, also when a step fails. Source it, then call fc_setup if
# the test needs the namespace.
#
# Every suite speaks TAP: `check` prints "ok N - what" or "not ok N - what",
# the plan "1..N" comes last, and a suite that can not run prints
# "1..0 # SKIP reason" (tests/run.sh reads nothing else).
# shellcheck shell=bash
set -u
cd "$(dirname "$0")/../.."
FC_BIN=${FC_BIN:-build/freqctl}
# The machine's /etc/default/freqctl is not the tests': no file unless a
# test names one.
export FREQCTL_CONFIG=

tag=$$
# The suite's own addresses and ports, so that suites can run side by side:
# each claims a free block of 1-127 (a lock on /tmp/fc-it-block.N, held
# while it runs), so suites of several runners at once do not collide either
# (FC_BLOCK set by hand chooses one). Block N is, in 198.18.0.0/15, the /24s 4N to 4N+3 (fc_net4 0-3; the
# veth's is the first: $host4 on the root side, $peer4 in the namespace),
# 2001:2:0:N::/64 in 2001:2::/48 ($host6, $peer6), and ports 12000 + 8N
# to 12007 + 8N (fc_port 0-7).
if [ -z "${FC_BLOCK:-}" ]; then
	for FC_BLOCK in $(seq 1 127); do
		exec {fc_block_fd}>>"/tmp/fc-it-block.$FC_BLOCK" 2>/dev/null || continue
		flock -n "$fc_block_fd" && break
		exec {fc_block_fd}>&-
		[ "$FC_BLOCK" -lt 127 ] || { echo "lib.sh: every address block (1-127) is in use" >&2; exit 1; }
	done
fi
if ! [[ $FC_BLOCK =~ ^[0-9]+$ ]] || [ "$FC_BLOCK" -lt 1 ] || [ "$FC_BLOCK" -gt 127 ]; then
	echo "lib.sh: FC_BLOCK \"$FC_BLOCK\": expected a block number, 1 to 127" >&2
	exit 2
fi
fc_net4() { # fc_net4 N: the first three octets of the block's Nth /24 (0-3)
	local n=$((FC_BLOCK * 4 + ${1:-0}))
	echo "198.$((18 + n / 256)).$((n % 256))"
}
net4=$(fc_net4 0)
host4=$net4.1 peer4=$net4.2
net6=2001:2:0:$(printf %x "$FC_BLOCK")
host6=$net6::1 peer6=$net6::2
ns=fc-it-$tag
host=fcit$tag # root side, where freqctl attaches
peer=fcip$tag # namespace side, the sender
pin=/sys/fs/bpf/fc-it-$tag
db=/tmp/fc-it-$tag/store.db
shm=/tmp/fc-it-$tag/shm # never the default: a real freqctl may be using it
# libxdp keeps its dispatchers' state (pinned links, its lock) under
# $LIBXDP_BPFFS/xdp, /sys/fs/bpf/xdp by default: a scratch bpffs directory
# instead, for every libxdp user the test starts (freqctl, xdp-filter).
export LIBXDP_BPFFS=/sys/fs/bpf/fc-it-$tag-xdp
tap_n=0 tap_failed=0 tap_planned=

fc_finish() {
	local p
	ip netns del "$ns" 2>/dev/null
	ip link del "$host" 2>/dev/null
	rm -rf "/tmp/fc-it-$tag"
	# Only what exists: without root, bpffs is not even searchable.
	for p in "$pin" "$LIBXDP_BPFFS"; do [ ! -e "$p" ] || rm -rf "$p"; done
	[ -n "$tap_planned" ] || echo "1..$tap_n"
}
trap fc_finish EXIT
trap 'exit 1' INT TERM
# libxdp wants it to exist (where /sys/fs/bpf is a bpffs, as freqctl needs).
mkdir -p "$LIBXDP_BPFFS" 2>/dev/null

# Skips what is left of the suite, saying why: the whole suite if nothing
# ran yet, else one skipped check.
skip_all() {
	if [ "$tap_n" -eq 0 ]; then
		echo "1..0 # SKIP $1"
		tap_planned=1
	else
		tap_n=$((tap_n + 1))
		echo "ok $tap_n # SKIP $1"
	fi
	exit 0
}

# One check skipped, saying why.
skip_one() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n # SKIP $1"
}

# Numbers the "ok - what" / "not ok - what" lines of another runner (the
# browser test) as this suite's checks; other lines pass through as
# comments. Fails when none came.
tap_relay() { # tap_relay < OUTPUT
	local line any=
	while IFS= read -r line; do
		case $line in
		"ok - "*) tap_n=$((tap_n + 1)); echo "ok $tap_n - ${line#ok - }"; any=1 ;;
		"not ok - "*) tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - ${line#not ok - }"; any=1 ;;
		*) echo "# $line" ;;
		esac
	done
	[ -n "$any" ]
}

check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	tap_n=$((tap_n + 1))
	if "$@"; then
		echo "ok $tap_n - $what"
	else
		tap_failed=$((tap_failed + 1))
		echo "not ok $tap_n - $what"
		return 1
	fi
}

fc() { "$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" "$@"; }
# Runs a command with its stdout discarded.
quiet() { "$@" >/dev/null; }
# fc with its stdout discarded, for checks (a redirection after check would
# swallow check's own TAP line).
fcq() { quiet fc "$@"; }

# jq_true FILTER [FILE]: the JSON (FILE or stdin) satisfies FILTER.
jq_true() { jq -e "$@" >/dev/null; }

# list_col ID COLUMN: that column of policy ID's row in `policy list`, found
# by the header's name, so that a column added later moves nothing read here.
list_col() {
	fc policy list | awk -v id="$1" -v col="$2" \
		'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i } NR > 1 && $1 == id && c { print $c }'
}

# A port for the test to listen on, the Nth (0-7) of its block: below the
# ephemeral range (32768-), so the local ports of the many client
# connections the tests make never hold it.
fc_port() { echo $((12000 + FC_BLOCK * 8 + ${1:-0})); }

# Debian's nginx with the built module, reading $shm, the user id from
# ?uid=, its files under /tmp/fc-it-$tag; FC_NGX_WORKERS sets the worker
# count (1), FC_NGX_HTTP and FC_NGX_SERVER add directives to its http and
# server blocks, FC_NGX_ACCESS_LOG replaces "access_log off"; FC_NGX_DIR and FC_NGX_SHM put another
# nginx in another directory on another shm (a fleet's nodes). fc_nginx_stop ends it by its pid (call it
# from the EXIT trap; FC_NGX_DIR the same).
MODULE=${FC_NGX_MODULE:-$PWD/build/ngx_http_freqctl_module.so}
fc_nginx_missing() {
	command -v nginx >/dev/null || { echo "nginx not installed (Debian nginx)"; return; }
	command -v curl >/dev/null || { echo "curl not installed"; return; }
	[ -f "$MODULE" ] || echo "$MODULE not built (make)"
}
fc_nginx_start() { # fc_nginx_start ADDR:PORT
	local d=${FC_NGX_DIR:-/tmp/fc-it-$tag} shm=${FC_NGX_SHM:-$shm}
	ngx_url=http://$1
	mkdir -p "$d/html" "$d/logs"
	echo ok >"$d/html/index.html"
	chmod -R a+rX "$d"
	[ -e "$shm" ] || fc sync >/dev/null
	cat >"$d/nginx.conf" <<CONF
load_module $MODULE;
user www-data www-data;
worker_processes ${FC_NGX_WORKERS:-1};
pid $d/nginx.pid;
error_log $d/logs/error.log notice;
events { worker_connections 256; }
http {
    ${FC_NGX_ACCESS_LOG:-access_log off;}
    freqctl_shm $shm;
    freqctl on;
    freqctl_uid \$arg_uid;
    ${FC_NGX_HTTP:-}
    server { listen $1; root $d/html; ${FC_NGX_SERVER:-} }
}
CONF
	nginx -p "$d" -c "$d/nginx.conf" -e "$d/logs/error.log" || return 1
	for _ in $(seq 50); do [ -f "$d/nginx.pid" ] && curl -s -o /dev/null "$ngx_url/" && return 0; sleep 0.1; done
	return 1
}
# The statuses of N requests to PATH of the nginx started (extra curl args
# after), on one line.
codes() { # codes N PATH [curl args]
	local n=$1 path=$2 i out=""
	shift 2
	for i in $(seq "$n"); do
		out="$out$(curl -s -o /dev/null -w '%{http_code}' "$@" "$ngx_url$path") "
	done
	echo "${out% }"
}
# How many of the statuses in LIST are STATUS.
count() { tr ' ' '\n' <<<"$1" | grep -c "^$2\$"; }
# Polls until a request to PATH answers STATUS, for at most 100 ms.
status_within_100ms() { # status_within_100ms STATUS PATH [curl args]
	local want=$1 path=$2 i
	shift 2
	for i in $(seq 10); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$@" "$ngx_url$path")" = "$want" ] && return 0
		sleep 0.01
	done
	return 1
}
# The start of a suite that runs nginx: skipped without root, nginx or the
# workers' group; nginx stopped (by its pid) and everything removed on exit.
fc_nginx_suite() {
	local why
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (bpffs for the pin dir, nginx workers as www-data)"
	why=$(fc_nginx_missing)
	[ -z "$why" ] || skip_all "$why"
	getent group www-data >/dev/null || skip_all "no www-data group for the workers"
	trap 'fc_nginx_stop; fc_finish' EXIT
}
# nginx -s reload, then waits (5 s at most) until the workers are all new
# ones: what is asked after it, new workers answer.
fc_nginx_reload() {
	local d=/tmp/fc-it-$tag old
	old=$(pgrep -P "$(cat "$d/nginx.pid")" | sort)
	nginx -p "$d" -c "$d/nginx.conf" -e "$d/logs/error.log" -s reload || return 1
	wait_until 5 fc_nginx_workers_new "$old"
}
fc_nginx_workers_new() { # fc_nginx_workers_new OLD-PIDS
	local now
	now=$(pgrep -P "$(cat "/tmp/fc-it-$tag/nginx.pid")" | sort)
	[ -n "$now" ] && [ -z "$(comm -12 <(echo "$1") <(echo "$now"))" ]
}
fc_nginx_stop() {
	local pid f=${FC_NGX_DIR:-/tmp/fc-it-$tag}/nginx.pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	kill -QUIT "$pid" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
}

# Writes counters past INT64_MAX into the state file as the nginx workers'
# user could: the header's allowed, and in policy ID's slot passed, denied
# and delayed 2^63, keys, overflowed, inflight, overflow_inflight and
# conc_denied 2^64-1. Fails if no slot is policy ID's. Needs python3.
forge_counters() { # forge_counters ID
	runuser -u www-data -- python3 - "$shm.state" "$1" <<'PY'
import mmap, struct, sys
SLOTS, SLOT = 4096, 128  # FC_STATE_SLOTS_OFF, sizeof(struct fc_shm_slot)
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    struct.pack_into("<Q", m, 8, 2**64 - 1)  # the header's allowed
    for i in range(1, 65537):
        if struct.unpack_from("<Q", m, SLOTS + i * SLOT + 32)[0] >> 32 == int(sys.argv[2]):  # owner: (id << 32) | epoch
            # passed, denied, delayed, new_keys, keys, overflowed, inflight, overflow_inflight, conc_denied
            struct.pack_into("<9Q", m, SLOTS + i * SLOT + 40, *([2**63] * 3 + [0] + [2**64 - 1] * 5))
            sys.exit(0)
sys.exit(1)
PY
}

# Polls until COMMAND succeeds, every 0.05 s for at most SECONDS (a whole
# number); fails if it never did. For what a test waits on, where a fixed
# sleep would be too long, or on a loaded machine too short.
wait_until() { # wait_until SECONDS COMMAND...
	local n=$(($1 * 20))
	shift
	until "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.05
	done
}

# Fleet policies: the agent writes <shm>.fleet.json each sync round (design
# §10), its "rounds" counting them. fleet_rounds SHM: the count now (-1 with
# no file). fleet_wait_rounds NODE K: waits until node NODE's agent has
# ended K more rounds, polling every 20 ms for at most K seconds; NODE is
# a node of fleet4.sh (its shm /tmp/fc-it-$tag/NODE.shm) or "-" for $shm.
# Tests count rounds, not wall time: a round is the unit of every fleet
# bound.
fleet_shm() { if [ "$1" = - ]; then echo "$shm"; else echo "/tmp/fc-it-$tag/$1.shm"; fi; }
fleet_rounds() { jq -e '.rounds' "$1.fleet.json" 2>/dev/null || echo -1; }
fleet_wait_rounds() { # fleet_wait_rounds NODE K
	local f n0 n end=$((${EPOCHREALTIME/./} + $2 * 1000000))
	f=$(fleet_shm "$1")
	n0=$(fleet_rounds "$f")
	[ "$n0" -ge 0 ] || { echo "# fleet_wait_rounds: no $f.fleet.json" >&2; return 1; }
	while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
		n=$(fleet_rounds "$f")
		[ "$n" -ge $((n0 + $2)) ] && return 0
		sleep 0.02
	done
	echo "# fleet_wait_rounds $1 $2: rounds $n0 -> $n in $2 s" >&2
	return 1
}

# Something listens on TCP port PORT (of this namespace).
listening() { [ -n "$(ss -Hltn "sport = :$1")" ]; }

# Pings the root side from the namespace, COUNT at INTERVAL seconds; prints
# how many replies came back.
pings() { # pings 4|6 COUNT [INTERVAL]
	local dst=$host4
	[ "$1" = 6 ] && dst=$host6
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

# The program on $host's XDP hook, to test-run for freqctl's verdict: freqctl's
# own, or libxdp's dispatcher running it as the interface does (in there
# freqctl is a program extension, not an XDP program of its own).
xdp_hook_prog() { ip -d -j link show dev "$host" | jq -r '.[0].xdp.prog.id'; }

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
	ip addr add "$host4/24" dev "$host"
	ip -6 addr add "$host6/64" dev "$host" nodad
	ip link set "$host" up
	ip -n "$ns" addr add "$peer4/24" dev "$peer"
	ip -n "$ns" -6 addr add "$peer6/64" dev "$peer" nodad
	ip -n "$ns" link set "$peer" up
	ip -n "$ns" link set lo up
	# Static neighbours: no ARP or neighbour discovery of the kernel's own
	# choosing, so every IP packet from the namespace is one the test sent.
	ip -n "$ns" neigh replace "$host4" lladdr "$(cat /sys/class/net/"$host"/address)" dev "$peer" nud permanent
	ip -n "$ns" neigh replace "$host6" lladdr "$(cat /sys/class/net/"$host"/address)" dev "$peer" nud permanent
	ip neigh replace "$peer4" lladdr "$(ip netns exec "$ns" cat /sys/class/net/"$peer"/address)" dev "$host" nud permanent
	ip neigh replace "$peer6" lladdr "$(ip netns exec "$ns" cat /sys/class/net/"$peer"/address)" dev "$host" nud permanent
	set +e
}
