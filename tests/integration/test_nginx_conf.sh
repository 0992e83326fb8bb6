#!/usr/bin/env bash
# The module's configuration and delay lifecycle in a real nginx: "freqctl on"
# without "freqctl_shm" is refused by nginx -t, as limit_req without a zone;
# refusals and bans are logged at error by default, where Debian's error_log
# shows them, and delays one level below (as limit_req logs them), or at the
# level freqctl_log_level names and one below; and a client that closed its
# connection before its delay began is let go at once, not when the delay
# ends. (The module posts a read event that is already ready, as nginx's
# 2021 fix to limit_req's delay does; with epoll's RDHUP, as here, nginx
# notices such a close anyway, so this checks the behaviour, not the fix.)
# The nginx started here is stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (nginx as www-data, the shm's group)"
why=$(fc_nginx_missing)
[ -z "$why" ] || skip_all "$why"
trap 'fc_nginx_stop; fc_finish' EXIT
port=$(fc_port)
d=/tmp/fc-it-$tag
mkdir -p "$d/logs"

cat >"$d/noshm.conf" <<CONF
load_module $MODULE;
error_log $d/logs/noshm.log;
events { }
http { server { listen 127.0.0.1:$port; location / { freqctl on; } } }
CONF
check "freqctl on without freqctl_shm: nginx -t fails, naming both" \
	sh -c "! nginx -t -p '$d' -c '$d/noshm.conf' 2>'$d/t.err' && grep -q '\"freqctl on\" needs \"freqctl_shm\"' '$d/t.err'"

fc policy add 1 --match uid=d --rate 1/s --burst 1 --action delay --delay-burst 5 >/dev/null
fc policy add 2 --match uid=r --rate 1/m --burst 1 >/dev/null
fc policy add 3 --match uid=w --rate 1/m --burst 1 >/dev/null
fc ban add uid=evil >/dev/null
mkdir -p "$d/html/warn"
echo ok >"$d/html/warn/index.html"
# The requests' log as Debian's nginx.conf has it, "error_log ... error",
# and one at notice beside it that sees the levels below.
FC_NGX_ACCESS_LOG="log_format t '\$arg_uid \$status \$request_time'; access_log $d/logs/access.log t;" \
	FC_NGX_HTTP="error_log $d/logs/debian.log error; error_log $d/logs/all.log notice;" \
	FC_NGX_SERVER="location /warn/ { freqctl_log_level warn; }" \
	fc_nginx_start "127.0.0.1:$port" || skip_all "nginx did not start"

curl -s -o /dev/null "http://127.0.0.1:$port/?uid=d" # the burst
# Sent, then closed at once: the request waits ~1 s in the delay queue.
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /?uid=d HTTP/1.1\r\nHost: x\r\n\r\n' >&3
exec 3>&- 3<&-
for _ in $(seq 30); do [ "$(grep -c '^d ' "$d/logs/access.log" 2>/dev/null)" -ge 2 ] && break; sleep 0.1; done
line=$(grep '^d ' "$d/logs/access.log" | tail -1)
check "a client gone before its delay is let go at once, 499 ($line)" \
	awk -v l="$line" 'BEGIN { split(l, f, " "); exit !(f[2] == 499 && f[3] < 0.5) }'

curl -s -o /dev/null "http://127.0.0.1:$port/?uid=r"
curl -s -o /dev/null "http://127.0.0.1:$port/?uid=r"
curl -s -o /dev/null "http://127.0.0.1:$port/?uid=evil"
curl -s -o /dev/null "http://127.0.0.1:$port/warn/?uid=w"
curl -s -o /dev/null "http://127.0.0.1:$port/warn/?uid=w"
check "error_log at error (Debian's): a refusal is there" grep -q '\[error\].*freqctl: policy 2 rejected' "$d/logs/debian.log"
check "... and a ban" grep -q '\[error\].*freqctl: banned, uid "evil"' "$d/logs/debian.log"
check "... a delay is not: it is logged one level below, at warn" \
	sh -c "! grep -q 'freqctl: policy 1 delaying' '$d/logs/debian.log' && grep -q '\[warn\].*freqctl: policy 1 delaying' '$d/logs/all.log'"
check "freqctl_log_level warn: a refusal at warn (not in the error_log at error)" \
	sh -c "grep -q '\[warn\].*freqctl: policy 3 rejected' '$d/logs/all.log' && ! grep -q 'policy 3' '$d/logs/debian.log'"
exit 0
