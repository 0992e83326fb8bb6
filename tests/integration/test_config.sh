#!/usr/bin/env bash
# One configuration for the CLI and the agent: the file the agent's unit
# reads (/etc/default/freqctl; FREQCTL_CONFIG names another here, never the
# machine's) is read by every command, parsed as systemd reads it; the
# environment wins over it and an option over both; status shows where each
# setting came from, secrets redacted; a line freqctl does not understand
# stops it with the file and line; root refuses a file others may write.
# With nginx enforcing a policy from a shm the file names, stats in a shell
# without options counts what nginx refused.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"
command -v bpftool >/dev/null || skip_all "bpftool not installed"
d=/tmp/fc-it-$tag
mkdir -p "$d"
conf=$d/freqctl.conf
apid=
trap '[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null; fc_nginx_stop; fc_finish' EXIT
# freqctl as a shell runs it: no option, the file named.
bare() { FREQCTL_CONFIG=$conf "$FC_BIN" "$@"; }
cat >"$conf" <<EOF
# /etc/default/freqctl, as the agent's unit reads it
FREQCTL_DB=$db
FREQCTL_PIN_DIR='$pin'
FREQCTL_SHM="$shm"

; the redis password is never shown
FREQCTL_REDIS=redis://fleet:s3cret-pw@127.0.0.1:1
FREQCTL_REDIS_PASSWORD_FILE=$d/redis.pw
EOF
echo "PASSWORD-IN-FILE" >"$d/redis.pw"
chmod 0600 "$d/redis.pw"
# A freqctl that does not read the file would run the commands below on the
# machine's own store, pin dir and shm: stop first, asking with the paths given.
check "freqctl reads the file FREQCTL_CONFIG names" jq_true --arg c "$conf" '.configuration.file == $c' \
	<<<"$(FREQCTL_CONFIG=$conf "$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" status --json 2>/dev/null)" ||
	exit 1

# ---- the CLI in a shell reads the store, pin dir and shm the file names ----
check "ban add without options: the file's store and pin dir" quiet bare ban add 198.18.0.5
check "... the ban is in the file's store" jq_true 'map(.ban) == ["198.18.0.5"]' <<<"$(fc ban list --json)"
check "... and in the file's pin dir" [ -e "$pin/fc_exact4" ]
check "policy add without options: published to the file's shm" quiet bare policy add 1 --match 'uid=*' --rate 2/m
fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"
check "nginx, reading that shm, refuses the third request" [ "$(codes 3 '/?uid=u1')" = "200 200 429" ]
stats=$(bare stats --json)
check "stats without options: nginx's counts (2 passed, 1 refused), not 0 0" \
	jq_true '.policies[] | select(.id == 1) | .passed.requests == 2 and .dropped.requests == 1' <<<"$stats"
check "... nginx's counts named requests, as the table says; packets and bytes kept until 0.3 (doc/upgrading.md)" \
	jq_true '.policies[] | select(.id == 1) | .passed == {requests: 2, packets: 2, bytes: 0}' <<<"$stats"
check "keys without options: u1's key" jq_true 'length == 1 and .[0].denied == 1' <<<"$(bare keys 1 --json)"

# ---- where each setting came from ----
st=$(FREQCTL_NODE=env-node bare --pin-dir "$pin" status --json)
check "status --json: the file, and each setting's origin" jq_true --arg c "$conf" --arg s "$shm" '.configuration.file == $c and
	(.configuration.settings | .db.from == "file" and .db.line == 2 and .db.file == $c and .db.variable == "FREQCTL_DB"
	 and .shm.from == "file" and .shm.line == 4 and .shm.value == $s
	 and .node.from == "environment" and .node.value == "env-node"
	 and ."pin-dir".from == "option"
	 and ."shm-keys".from == "default" and ."shm-keys".value == null and ."redis-prefix".value == null)' <<<"$st"
check "... the Redis URL's password redacted" jq_true \
	'.configuration.settings.redis.value == "redis://fleet:***@127.0.0.1:1" and .configuration.settings.redis.line == 7' <<<"$st"
text=$(FREQCTL_NODE=env-node bare --pin-dir "$pin" status)
check "status: the same in text" sh -c "grep -qE '^  db +$db +$conf:2\$' <<'EOF'
$text
EOF
grep -qE '^  node +env-node +environment FREQCTL_NODE\$' <<'EOF'
$text
EOF
grep -qE '^  pin-dir +$pin +option --pin-dir\$' <<'EOF'
$text
EOF"
check "... no secret anywhere in status, its password file never read for it" \
	sh -c "! grep -q -e s3cret-pw -e PASSWORD-IN-FILE <<'EOF'
$text
$st
EOF"
# A password in the file's URL: said while others may read the file, naming it.
chmod 0644 "$conf"
bare status >/dev/null 2>"$d/pw.err"
check "a password in the file's Redis URL, the file 0644: a warning naming the file and line, pointing to the password file" \
	grep -qF "freqctl: $conf:7: FREQCTL_REDIS holds a password and the file is readable by others (mode 0644): put it in a file of mode 0600 named by FREQCTL_REDIS_PASSWORD_FILE (--redis-password-file)" "$d/pw.err" ||
	sed 's/^/# /' "$d/pw.err"
check "... never the password itself" eval '! grep -q s3cret-pw "$d/pw.err"'
chmod 0600 "$conf"
bare status >/dev/null 2>"$d/pw.err"
check "... nothing once the file is 0600" eval '! grep -q "holds a password" "$d/pw.err"'
chmod 0644 "$conf"
check "the environment wins over the file" [ "$(FREQCTL_SHM=$d/env.shm bare status --json | jq -r .shm.path)" = "$d/env.shm" ]
check "an option wins over both" [ "$(FREQCTL_SHM=$d/env.shm bare --shm "$d/opt.shm" status --json | jq -r .shm.path)" = "$d/opt.shm" ]
check "FREQCTL_CONFIG empty: no file read" jq_true '.configuration.file == null and .configuration.settings.db.from == "default"' \
	<<<"$(FREQCTL_CONFIG= "$FC_BIN" --pin-dir "$pin" --shm "$shm" status --json)"

# ---- lines freqctl does not take ----
cp "$conf" "$conf.good"
echo 'FREQCTL_NODE = web1' >>"$conf"
bare ban add 198.18.0.6 >"$d/out" 2>"$d/err"
check "a space around '=': refused, exit 1 (the file's error, not the command line's)" [ $? = 1 ]
check "... naming the file and line, and no 'Try --help'" \
	sh -c "grep -qxF \"freqctl: $conf:9: a space before '=': write KEY=VALUE\" '$d/err' && ! grep -q Try '$d/err'"
check "... nothing done" jq_true 'length == 1' <<<"$(fc ban list --json)"
check "... --version still answers" quiet bare --version
cp "$conf.good" "$conf"
echo 'FREQCTL_SHM_KEYS=12' >>"$conf"
bare status >"$d/out" 2>"$d/err"
check "a value out of bounds: exit 1, the file, line and variable" \
	sh -c "[ $? = 1 ] && grep -qF '$conf:9: FREQCTL_SHM_KEYS: \"12\": expected a number of keys from 1024 to' '$d/err'"
cp "$conf.good" "$conf"
printf 'FREQCTL_PINDIR=/tmp/x\nPGAPPNAME=freqctl-test\n' >>"$conf"
bare status >"$d/out" 2>"$d/err"
check "an unknown key: warned of with file and line, the command runs" \
	sh -c "[ $? = 0 ] && grep -qxF \"freqctl: $conf:9: FREQCTL_PINDIR: not a setting of freqctl's, ignored (freqctl(8), ENVIRONMENT, lists them)\" '$d/err'"
check "... libpq's PG* variables are not unknown" sh -c "! grep -q PGAPPNAME '$d/err'"
cp "$conf.good" "$conf"
chmod 0666 "$conf"
bare status >"$d/out" 2>"$d/err"
check "a file others may write: refused (root), exit 1" [ $? = 1 ]
check "... saying so and how to fix it" grep -qxF "freqctl: config file $conf: writable by its group and others (mode 0666): chmod go-w $conf" "$d/err"
chmod 0600 "$conf"
if id nobody >/dev/null 2>&1 && command -v runuser >/dev/null; then
	chmod a+rx "$d" "$FC_BIN"
	runuser -u nobody -- env FREQCTL_CONFIG="$conf" FREQCTL_DB="$db" "$FC_BIN" policy list >"$d/out" 2>"$d/err"
	check "without root, a file kept from others (0600): warned of, the command runs" \
		sh -c "[ $? = 0 ] && grep -qxF 'freqctl: $conf: not readable without root: its settings are not read' '$d/err' &&
			grep -q 'uid=\*' '$d/out'"
else
	skip_one "no user nobody, or no runuser"
fi
chmod 0644 "$conf"
FREQCTL_CONFIG=$d/none "$FC_BIN" status >"$d/out" 2>"$d/err"
check "FREQCTL_CONFIG naming no file: exit 1" sh -c "[ $? = 1 ] && grep -qF 'FREQCTL_CONFIG: $d/none: no such file' '$d/err'"

# ---- systemd reads the file as freqctl does ----
gen=/lib/systemd/user-environment-generators/30-systemd-environment-d-generator
if [ -x "$gen" ]; then
	# systemd's own parser of KEY=VALUE files (environment.d shares it with
	# EnvironmentFile=), on the forms freqctl takes.
	mkdir -p "$d/xdg/environment.d"
	cat >"$d/xdg/environment.d/f.conf" <<'EOF'
# forms
  FREQCTL_NODE="node #1; it's"
FREQCTL_SHM_GROUP='www data'
	FREQCTL_REDIS_PREFIX=fc:a#b=c	
FREQCTL_PIN_DIR=/sys/fs/bpf/x
FREQCTL_PIN_DIR=/sys/fs/bpf/last
EOF
	sd=$(env -i XDG_CONFIG_HOME="$d/xdg" HOME="$d" "$gen" | grep '^FREQCTL_' | sort)
	fc_says=$(FREQCTL_CONFIG="$d/xdg/environment.d/f.conf" "$FC_BIN" status --json |
		jq -r '.configuration.settings | to_entries[] | select(.value.from == "file") |
			"\(.value.variable)=\(.value.value)"' | sort)
	sd_plain=$(while IFS= read -r l; do eval "v=${l#*=}"; echo "${l%%=*}=$v"; done <<<"$sd")
	check "systemd's parser reads the same values (freqctl: $(echo $fc_says))" [ "$sd_plain" = "$fc_says" ]
else
	skip_one "systemd's environment.d generator not installed"
fi

# ---- the agent reads the same file ----
# The agent is the one command that logs in to Redis: given a password in the
# URL and a password file too, it refuses to start, naming the file, and
# shows neither password.
rc=0
FREQCTL_CONFIG=$conf timeout 10 "$FC_BIN" agent >"$d/agent.log" 2>&1 || rc=$?
check "the agent refuses the file's two Redis passwords (exit $rc), showing neither" sh -c "[ $rc = 1 ] &&
	grep -q 'redis-password-file $d/redis.pw: the URL has a password already' '$d/agent.log' &&
	! grep -q -e s3cret-pw -e PASSWORD-IN-FILE '$d/agent.log'"
# The operator's fix (freqctl(8): the password file, not with one in the URL),
# and the file kept from others again: fc_nginx_start opened $d to nginx's
# workers, and the agent refuses a password file others may read.
sed -i 's|^FREQCTL_REDIS=redis://fleet:s3cret-pw@|FREQCTL_REDIS=redis://fleet@|' "$conf"
chmod 0600 "$d/redis.pw"
FREQCTL_CONFIG=$conf "$FC_BIN" agent >"$d/agent.log" 2>&1 &
apid=$!
for _ in $(seq 50); do grep -q "watching store" "$d/agent.log" && break; sleep 0.1; done
check "the agent, with no option, watches the file's store" grep -q "watching store $db" "$d/agent.log" ||
	sed 's/^/# agent: /' "$d/agent.log"
# A ban written to the store behind freqctl's back: only the agent publishes it.
sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO bans (family, addr, len, created) VALUES (4, x'c6120007', 32, 1)"
check "... and publishes to the file's pin dir" \
	wait_until 5 sh -c "bpftool map lookup pinned '$pin/fc_exact4' key 198 18 0 7 >/dev/null 2>&1"
exit 0
