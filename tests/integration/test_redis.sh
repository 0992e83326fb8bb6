#!/usr/bin/env bash
# The agent's Redis client (loader/lib/redis) against real Redis on
# loopback: a standalone redis-server (a password, an ACL user) and a
# Cluster of 3 primaries and 3 replicas, started here in a temp dir and
# ended by their pids however the test ends; the checks of
# tests/integration/fc_redis_it.c (routing, a pipeline per primary, MOVED,
# ASK, redis-cli --cluster reshard during traffic, a primary killed and its
# replica followed, hostile replies from a fake server); the option
# checks through build/fc_redis_probe (a URL that does not parse, TLS, a
# password file of the wrong mode or owner).
#
# Ports: a block of 20 from 26400-27199, picked by the pid among the free
# ones and held by a lock while the test runs; the Cluster's bus ports are
# in the block too (cluster-port), so none is in the ephemeral range.
. "$(dirname "$0")/lib.sh"

for bin in redis-server redis-cli; do
	command -v "$bin" >/dev/null || skip_all "$bin not installed (Debian redis-server and redis-tools)"
done
[ -x build/tests/fc_redis_it ] && [ -x build/fc_redis_probe ] || skip_all "build/tests/fc_redis_it not built (make)"
ldconfig -p | grep -q 'libhiredis\.so\.0\.14 ' || skip_all "libhiredis0.14 not installed"

rdir=/tmp/fc-it-$tag/redis
probe=build/fc_redis_probe
mkdir -p "$rdir"
chmod 700 "$rdir"

# Ends every redis-server this test started, by the pid it wrote, once it
# is sure the pid is still that server's.
redis_stop() {
	local f pid n
	for f in "$rdir"/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		grep -qa redis-server "/proc/$pid/cmdline" 2>/dev/null && kill "$pid" 2>/dev/null
	done
	for f in "$rdir"/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		for n in $(seq 50); do
			grep -qa redis-server "/proc/$pid/cmdline" 2>/dev/null || break
			sleep 0.1
		done
		grep -qa redis-server "/proc/$pid/cmdline" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	done
}
trap 'redis_stop; fc_finish' EXIT

# A block of 20 ports, all free, locked for this run.
ports_free() { # ports_free FIRST COUNT
	local p
	for p in $(seq "$1" $(($1 + $2 - 1))); do
		[ -z "$(ss -Htan "sport = :$p")" ] || return 1
	done
}
base=
for i in $(seq 0 39); do
	b=$((26400 + ((tag + i) % 40) * 20))
	exec {lock_fd}>>"/tmp/fc-redis-it.$b.lock" || continue
	if flock -n "$lock_fd" && ports_free "$b" 20; then
		base=$b
		break
	fi
	exec {lock_fd}>&-
done
[ -n "$base" ] || skip_all "no block of 20 free ports in 26400-27199"
echo "# ports $base-$((base + 19))"

# redis-cli, bounded in time: a server that stops answering ends no test.
rcli() { timeout 10 redis-cli "$@"; }

# redis_start PORT [ARG...]: a server of this test, answering within 5 s.
redis_start() {
	local port=$1 n
	shift
	mkdir -p "$rdir/$port"
	# Not daemonized: its pid is known at once. Disowned: bash says nothing
	# when fc_redis_it kills one.
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$rdir/$port" \
		--logfile "$rdir/$port/log" "$@" </dev/null >/dev/null 2>&1 &
	echo $! >"$rdir/$port.pid"
	disown
	for n in $(seq 50); do
		rcli -p "$port" ping 2>&1 | grep -qE 'PONG|NOAUTH' && return 0
		sleep 0.1
	done
	return 1
}

password=sa-$RANDOM-$RANDOM user_password=us-$RANDOM-$RANDOM
standalone=$base
cluster=()
for i in 1 2 3 4 5 6; do cluster+=($((base + i))); done
fake=$((base + 8))

redis_start "$standalone" --requirepass "$password" || skip_all "redis-server does not start (see $rdir/$standalone/log)"
rcli -p "$standalone" --no-auth-warning -a "$password" ACL SETUSER fleet on ">$user_password" '~*' '&*' '+@all' >/dev/null
# cluster-require-full-coverage no: a primary lost stops its slots, not all of them.
for p in "${cluster[@]}"; do
	redis_start "$p" --cluster-enabled yes --cluster-port $((p + 10)) --cluster-config-file "$rdir/$p/nodes.conf" \
		--cluster-node-timeout 1000 --cluster-require-full-coverage no ||
		skip_all "redis-server --cluster-enabled does not start (see $rdir/$p/log)"
done
addrs=()
for p in "${cluster[@]}"; do addrs+=("127.0.0.1:$p"); done
timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$rdir/create.log" 2>&1

# Made when every node's CLUSTER SLOTS names all six (the replicas are
# named once they are in sync), within 30 s.
cluster_whole() {
	local p want
	want=$(printf '%s\n' "${cluster[@]}" | sort)
	for p in "${cluster[@]}"; do
		[ "$(rcli -p "$p" cluster slots | grep -xE "$(IFS='|'; echo "${cluster[*]}")" | sort -u)" = "$want" ] ||
			return 1
	done
}
for _ in $(seq 300); do
	cluster_whole && break
	sleep 0.1
done
check "a Cluster of 3 primaries and 3 replicas on ${cluster[0]}-${cluster[5]}" cluster_whole

# ---- options, through the probe ----

# run_probe ARG...: its exit status in $rc, its output in $out and $err.
run_probe() {
	out=$("$probe" "$@" 2>"$rdir/err")
	rc=$?
	err=$(cat "$rdir/err")
}
refused() { # refused STATUS TEXT: the last run failed so, saying TEXT
	[ "$rc" = "$1" ] && grep -qF -- "$2" <<<"$err" || { echo "# exit $rc: $err"; return 1; }
}
run_probe --redis "redis://h:99999" PING
check "a port out of range: refused, naming the URL and what is expected" \
	refused 2 'fc_redis_probe: --redis: "redis://h:99999": port must be 1-65535'
run_probe --redis "redis://fleet:s3cr3t@127.0.0.1:6379/5" PING
check "a database number: refused, the password not shown" \
	refused 2 '"redis://fleet:***@127.0.0.1:6379/5": a database number is not supported'
check "... and not in anything printed" eval '! grep -q s3cr3t <<<"$err$out"'
run_probe --redis "rediss://127.0.0.1:6379" PING
check "rediss://: refused, saying why (no TLS in hiredis 0.14)" refused 2 'TLS is not supported'

pwfile=$rdir/password
printf '%s\n' "$user_password" >"$pwfile"
chmod 644 "$pwfile"
run_probe --redis "redis://fleet@127.0.0.1:$standalone" --redis-password-file "$pwfile" PING
check "a password file others can read: refused" \
	refused 1 "--redis-password-file $pwfile: must be a regular file of user $(id -u), mode 0600 or 0400 (it is a file, user $(id -u), mode 644)"
chmod 600 "$pwfile"
if id nobody >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	chown nobody "$pwfile"
	run_probe --redis "redis://fleet@127.0.0.1:$standalone" --redis-password-file "$pwfile" PING
	check "a password file of another user: refused" refused 1 "(it is a file, user $(id -u nobody), mode 600)"
	chown 0 "$pwfile"
else
	skip_one "a password file of another user: needs root and a user nobody"
fi
run_probe --redis "redis://fleet@127.0.0.1:$standalone" --redis-password-file "$pwfile" SET p:k 1 \; GET p:k
check "the password from a file of mode 0600: AUTH as the ACL user" \
	eval '[ "$rc" = 0 ] && grep -qx "2 ok: a bulk string of 1 bytes (\"1\")" <<<"$out" && grep -qx "mode: standalone" <<<"$out"'
run_probe --redis "redis://127.0.0.1:${cluster[3]}" PING
check "a Cluster found from one of its nodes: three primaries, three replicas" \
	eval '[ "$rc" = 0 ] && grep -qx "mode: cluster" <<<"$out" && [ "$(grep -c "^node: .* primary " <<<"$out")" = 3 ] &&
		[ "$(grep -c "^node: .* replica " <<<"$out")" = 3 ]'

# ---- the client, in C ----

cluster_ports=${cluster[*]}
FC_REDIS_IT_STANDALONE=127.0.0.1:$standalone FC_REDIS_IT_PASSWORD=$password \
	FC_REDIS_IT_USER_PASSWORD=$user_password FC_REDIS_IT_CLUSTER=$cluster_ports FC_REDIS_IT_DIR=$rdir \
	FC_REDIS_IT_FAKE=$fake CMOCKA_MESSAGE_OUTPUT=TAP timeout 300 build/tests/fc_redis_it >"$rdir/it.log" 2>&1
it_rc=$?
tap_relay < <(sed -E 's/^(not )?ok [0-9]+ - /\1ok - /' "$rdir/it.log")
check "fc_redis_it ended by itself, every test passed (exit $it_rc)" [ "$it_rc" = 0 ]
