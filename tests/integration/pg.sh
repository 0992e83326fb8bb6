# A PostgreSQL cluster of the test's own: Debian's server binaries, run as
# the postgres user, in a scratch directory, on a private port and a unix
# socket only (no TCP). Source it; pg_start sets pg_dsn; pg_cleanup (call it
# from the EXIT trap) stops what pg_start started and removes its files.
# shellcheck shell=bash

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
pg_dir= pg_port= pg_dsn=

# Why this machine can not run a cluster, or nothing.
pg_missing() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root (to run PostgreSQL as the postgres user)"; return; }
	[ -x "$pg_bin/initdb" ] || { echo "PostgreSQL server not installed (Debian postgresql)"; return; }
	id postgres >/dev/null 2>&1 || { echo "no postgres user (Debian postgresql makes it)"; return; }
	command -v psql >/dev/null || echo "psql not installed (Debian postgresql-client)"
}

pg_as() { runuser -u postgres -- "$@"; }

pg_ctl_start() {
	pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w -t 30 \
		-o "-p $pg_port -k $pg_dir/sock -c listen_addresses= -c fsync=off" start >/dev/null
}

pg_ctl_stop() { pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null; }

pg_start() { # pg_start DIR: creates the cluster and database freqctl
	pg_dir=$1
	pg_port=$((30000 + $$ % 20000))
	mkdir -p "$pg_dir/sock" && chown -R postgres: "$pg_dir" || return 1
	pg_as "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U postgres --no-sync >"$pg_dir/initdb.log" 2>&1 || return 1
	pg_ctl_start || return 1
	pg_dsn="postgresql:///freqctl?host=$pg_dir/sock&port=$pg_port&user=postgres"
	pg_sql postgres "CREATE DATABASE freqctl"
}

pg_sql() { # pg_sql DATABASE SQL
	psql -q -X -v ON_ERROR_STOP=1 "postgresql:///$1?host=$pg_dir/sock&port=$pg_port&user=postgres" -c "$2" >/dev/null
}

pg_cleanup() {
	[ -n "$pg_dir" ] || return 0
	[ -f "$pg_dir/data/postmaster.pid" ] && pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w stop >/dev/null 2>&1
	rm -rf "$pg_dir"
}
