#!/usr/bin/env bash
# A real nginx (Debian's binary) loading the built module, on a loopback port,
# with its own prefix and config; policies and bans published with freqctl.
# Checks exact pass counts and headers for uid, arg, header and combined
# policies; that other keys are unaffected; that adds, changes and deletes
# take effect without a reload within 100 ms; that a reload keeps counters;
# uid bans; dry run; and that a missing shm fails open. The nginx started
# here is stopped by its pid on exit, also when a step fails.
set -u
cd "$(dirname "$0")/../.."
FC_BIN=${FC_BIN:-build/freqctl}
MODULE=${FC_NGX_MODULE:-$PWD/build/ngx_http_freqctl_module.so}

tag=$$
dir=/tmp/fc-ngx-$tag
port=$((20000 + tag % 20000))
pin=/sys/fs/bpf/fc-ngx-$tag
shm=$dir/shm
passed=0 failed=0 skipped=0

finish() {
	if [ -f "$dir/nginx.pid" ]; then
		pid=$(cat "$dir/nginx.pid")
		kill -QUIT "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	fi
	rm -rf "$dir" "$pin"
	echo "$passed passed, $failed failed, $skipped skipped"
}
trap finish EXIT
trap 'exit 1' INT TERM

skip_all() { echo "SKIPPED: $1"; skipped=1; exit 0; }

check() {
	local what=$1
	shift
	if "$@"; then passed=$((passed + 1)); echo "ok - $what"; else failed=$((failed + 1)); echo "not ok - $what"; fi
}

fc() { "$FC_BIN" --db "$dir/store.db" --pin-dir "$pin" --shm "$shm" "$@" >/dev/null; }

# The statuses of N requests to PATH (extra curl args after), on one line.
codes() { # codes N PATH [curl args]
	local n=$1 path=$2 i out=""
	shift 2
	for i in $(seq "$n"); do
		out="$out$(curl -s -o /dev/null -w '%{http_code}' "$@" "http://127.0.0.1:$port$path") "
	done
	echo "${out% }"
}

count() { tr ' ' '\n' <<<"$1" | grep -c "^$2\$"; }

# Polls until a request to PATH answers STATUS, for at most 100 ms.
within_100ms() { # within_100ms STATUS PATH [curl args]
	local want=$1 path=$2 i
	shift 2
	for i in $(seq 10); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$@" "http://127.0.0.1:$port$path")" = "$want" ] && return 0
		sleep 0.01
	done
	return 1
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root (bpffs for the pin dir, nginx workers as www-data)"
command -v nginx >/dev/null || skip_all "nginx not installed (Debian nginx)"
command -v curl >/dev/null || skip_all "curl not installed"
[ -f "$MODULE" ] || skip_all "$MODULE not built (make)"
getent group www-data >/dev/null || skip_all "no www-data group for the workers"

mkdir -p "$dir/html/dry" "$dir/html/cx" "$dir/logs"
echo ok >"$dir/html/index.html"
echo ok >"$dir/html/dry/index.html"
echo ok >"$dir/html/cx/index.html"
chmod -R a+rX "$dir"
cat >"$dir/nginx.conf" <<CONF
load_module $MODULE;
user www-data www-data;
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/logs/error.log notice;
events { worker_connections 256; }
http {
    log_format fc '\$status \$freqctl_status \$freqctl_policy';
    access_log $dir/logs/access.log fc;
    freqctl_shm $shm;
    freqctl on;
    freqctl_uid \$arg_uid;
    server {
        listen 127.0.0.1:$port;
        root $dir/html;
        location /dry/ { freqctl_dry_run on; }
        location /off/ { freqctl off; }
        location /cx/ { freqctl_uid "team-\$arg_team"; }
    }
}
CONF

fc policy add 1 --match 'uid=u1' --rate 3/m
fc policy add 2 --match 'arg:api=login,uid=u2' --rate 2/m
fc policy add 3 --match 'header:X-Key=k3' --rate 1/m --rate 100/d
fc policy add 4 --match 'uri=/dry/,uid=u4' --rate 1/m
fc policy add 15 --match 'uid=team-red' --rate 2/m
fc ban add uid=evil

nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" || { echo "not ok - nginx did not start"; failed=1; exit 1; }
for _ in $(seq 50); do [ -f "$dir/nginx.pid" ] && curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

got=$(codes 3 "/cx/?team=red")
check "freqctl_uid as a complex value (\"team-\$arg_team\"): 2/m on team-red ($got)" [ "$got" = "200 200 429" ]
got=$(codes 1 "/cx/?team=blue")
check "... another team is not limited ($got)" [ "$got" = 200 ]
got=$(codes 5 "/?uid=u1")
check "uid=u1 3/m: 3 of 5 pass ($got)" [ "$got" = "200 200 200 429 429" ]
check "another uid is unaffected" [ "$(codes 3 '/?uid=u9')" = "200 200 200" ]
hdrs=$(curl -s -D - -o /dev/null "http://127.0.0.1:$port/?uid=u1")
check "denied: Retry-After in whole seconds" grep -q '^Retry-After: [0-9]*' <<<"$hdrs"
check "denied: RateLimit-Policy" grep -q '^RateLimit-Policy: "p1";q=3;w=60' <<<"$hdrs"
check "denied: RateLimit" grep -q '^RateLimit: "p1";r=0;t=[0-9]*' <<<"$hdrs"
check "access log: REJECTED by policy 1" grep -q '^429 REJECTED 1$' "$dir/logs/access.log"
check "error log names the policy and the uid" grep -q 'policy 1 rejected request, uid "u1"' "$dir/logs/error.log"
stats=$("$FC_BIN" --db "$dir/store.db" --pin-dir "$pin" --shm "$shm" stats --json)
check "freqctl stats: policy 1 passed 3 in nginx" [ "$(jq '.policies[] | select(.id == 1) | .passed.packets' <<<"$stats")" = 3 ]
check "freqctl stats: policy 1 denied 3" [ "$(jq '.policies[] | select(.id == 1) | .dropped.packets' <<<"$stats")" = 3 ]

got=$(codes 4 "/?uid=u2&api=login")
check "arg:api=login,uid=u2 2/m: 2 of 4 ($got)" [ "$(count "$got" 200)" = 2 ]
check "same uid, other arg: unaffected" [ "$(codes 3 '/?uid=u2&api=other')" = "200 200 200" ]
got=$(codes 3 "/" -H "X-Key: k3")
check "header:x-key=k3 1/m: 1 of 3 ($got)" [ "$got" = "200 429 429" ]
check "other header value: unaffected" [ "$(codes 2 / -H 'X-Key: k4')" = "200 200" ]

check "uid ban: 403" [ "$(codes 1 '/?uid=evil')" = "403" ]
check "access log: BANNED" grep -q '^403 BANNED -$' "$dir/logs/access.log"

got=$(codes 3 "/dry/?uid=u4")
check "dry run passes everything ($got)" [ "$got" = "200 200 200" ]
check "dry run logs what it would have done" grep -q 'policy 4 would reject request' "$dir/logs/error.log"
check "access log: REJECTED_DRY_RUN" grep -q '^200 REJECTED_DRY_RUN 4$' "$dir/logs/access.log"
check "freqctl off: not checked" [ "$(codes 2 '/off/?uid=evil')" = "404 404" ]

# Live changes, no reload.
fc policy add 5 --match 'uid=u5' --rate 1/m
check "policy added: enforced within 100 ms" within_100ms 429 "/?uid=u5"
fc policy set 5 --match 'uid=u5' --rate 1/m --burst 5
check "limits changed: more room within 100 ms, state kept" within_100ms 200 "/?uid=u5"
fc policy del 5
check "policy deleted: passes within 100 ms" within_100ms 200 "/?uid=u5"
check "deleted policy: stays passing" [ "$(codes 5 '/?uid=u5')" = "200 200 200 200 200" ]
fc ban del uid=evil
check "ban lifted within 100 ms" within_100ms 200 "/?uid=evil"

# A reload keeps the counters: the shm outlives the workers.
nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" -s reload
sleep 0.5
check "after nginx -s reload: uid=u1 still limited" [ "$(codes 2 '/?uid=u1')" = "429 429" ]

# The shm removed: requests pass (logged once); back: enforced again.
mv "$shm" "$shm.away"
sleep 1.2
check "shm removed: fail open" [ "$(codes 3 '/?uid=u1')" = "200 200 200" ]
check "shm removed: logged" grep -q "is missing: requests pass" "$dir/logs/error.log"
mv "$shm.away" "$shm"
sleep 1.2
check "shm back: enforced again" [ "$(codes 1 '/?uid=u1')" = "429" ]
check "no worker crashed" sh -c "! grep -q 'exited on signal' '$dir/logs/error.log'"
exit 0
