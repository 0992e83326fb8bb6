#!/usr/bin/env bash
# The agent's two HTTP servers (--metrics and the console's --http) against
# clients that hold connections without sending a whole request: 48 of them
# on each, 16 from each of 127.0.0.1, 127.0.0.2 and 127.0.0.3, each sending
# a partial request, then a header line every 8 s (which restarts
# libmicrohttpd's idle timeout). An address keeps 8 connections (a quarter
# of 32) and a new one takes the place of its oldest, so an authenticated
# curl from each address is answered at once; a connection whose request is
# not whole 10 s after it opened is closed, however it trickles; a request
# sent in pieces within that is answered. Real sockets, a real agent.
. "$(dirname "$0")/lib.sh"
d=/tmp/fc-it-$tag
apid=
trap '[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null; fc_finish' EXIT
[ "$(id -u)" -eq 0 ] || skip_all "needs root (pinned maps)"
command -v python3 >/dev/null || skip_all "python3 not installed (holds the sockets)"
command -v curl >/dev/null || skip_all "curl not installed"
mkdir -p "$d"
mport=$(fc_port 0) hport=$(fc_port 1)

"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent --metrics "127.0.0.1:$mport" --http "127.0.0.1:$hport" \
	--token-file "$d/token" >"$d/agent.log" 2>&1 &
apid=$!
wait_until 5 grep -q "watching store" "$d/agent.log"
check "agent serving /metrics and the console" wait_until 5 listening "$hport"
token=$(cat "$d/token")

# Holds 48 connections to 127.0.0.1:PORT asking for PATH, 16 from each of
# 127.0.0.1-3; writes to OUT what it sees, at these times after they opened:
# "open@1 N1 N2 N3" (still open per address), "ready" (curl's turn: it has
# 4 s), "open@8 N" (before trickling the next line), "open@12 N", and
# "pieces STATUS" for a request sent in pieces 1 s apart from 127.0.0.4.
hold() { # hold PORT PATH OUT
	python3 - "$@" <<'PY'
import socket, sys, time
port, path, out = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], "w", buffering=1)
head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()

def connect(src):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s

def is_open(s):
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False

held = []
for a in (1, 2, 3):
    for _ in range(16):
        s = connect(f"127.0.0.{a}")
        try:
            s.send(head)
        except OSError:
            pass
        held.append((a, s))
t0 = time.monotonic()
def at(t):
    time.sleep(max(0, t0 + t - time.monotonic()))
at(1)
out.write("open@1 " + " ".join(str(sum(1 for a, s in held if a == b and is_open(s))) for b in (1, 2, 3)) + "\n")
out.write("ready\n")
# A request in pieces 1 s apart, whole after 3 s: answered.
p = connect("127.0.0.4")
for piece in (head, b"X-A: 1\r\n", b"X-B: 2\r\n", b"\r\n"):
    p.send(piece)
    time.sleep(1)
p.settimeout(3)
try:
    out.write("pieces " + p.recv(64).split(b" ")[1].decode() + "\n")
except (OSError, IndexError):
    out.write("pieces none\n")
at(8)
out.write("open@8 %d\n" % sum(1 for a, s in held if is_open(s)))
for a, s in held:
    try:
        s.send(b"X-Trickle: 1\r\n")
    except OSError:
        pass
at(12)
out.write("open@12 %d\n" % sum(1 for a, s in held if is_open(s)))
PY
}
said() { grep -qx "$2" "$1"; }
# curl from address A to PORT PATH with the token, answered 200 within 3 s.
served() { # served A PORT PATH
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 --interface "127.0.0.$1" \
		-H "Authorization: Bearer $token" "http://127.0.0.1:$2$3")" = 200 ]
}

hold "$mport" /metrics "$d/metrics.out" &
mpid=$!
hold "$hport" /api/stats "$d/console.out" &
hpid=$!
for l in metrics console; do
	wait_until 5 said "$d/$l.out" ready
	check "$l: each address keeps 8 of its 16 connections" said "$d/$l.out" "open@1 8 8 8"
done
for a in 1 2 3; do
	check "/metrics: an authenticated curl from 127.0.0.$a is answered" served "$a" "$mport" /metrics
	check "console: an authenticated curl from 127.0.0.$a is answered" served "$a" "$hport" /api/stats
done
wait "$mpid" "$hpid"
for l in metrics console; do
	check "$l: a request sent in pieces over 3 s is answered" said "$d/$l.out" "pieces 401"
	check "$l: the held connections are open at 8 s (the curls took one place each)" said "$d/$l.out" "open@8 21"
	check "$l: and closed by 12 s, though each sent a line at 8 s" said "$d/$l.out" "open@12 0"
done
check "the agent still runs" kill -0 "$apid"
check "/metrics answers afterwards" served 1 "$mport" /metrics
exit 0
