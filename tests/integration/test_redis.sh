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
# Servers and ports: tests/integration/redis.sh (the suite's block).
. "$(dirname "$0")/lib.sh"

[ -x build/tests/fc_redis_it ] && [ -x build/fc_redis_probe ] || skip_all "build/tests/fc_redis_it not built (make)"
ldconfig -p | grep -q 'libhiredis\.so\.0\.14 ' || skip_all "libhiredis0.14 not installed"

# shellcheck source=tests/integration/redis.sh
. tests/integration/redis.sh
why=$(redis_missing)
[ -z "$why" ] || skip_all "$why"
trap 'redis_cleanup; fc_finish' EXIT
rdir=$redis_dir
probe=build/fc_redis_probe
fake=$(redis_port 7)
password=sa-$RANDOM-$RANDOM user_password=us-$RANDOM-$RANDOM

redis_standalone --requirepass "$password" || skip_all "redis-server does not start (see $rdir/$(redis_port 0)/log)"
standalone=$(redis_port 0)
rcli -p "$standalone" --no-auth-warning -a "$password" ACL SETUSER fleet on ">$user_password" '~*' '&*' '+@all' >/dev/null
redis_cluster
cluster=("${redis_cluster_ports[@]}")
check "a Cluster of 3 primaries and 3 replicas on ${cluster[0]}-${cluster[5]}" redis_cluster_ok

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
