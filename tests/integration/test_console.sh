#!/usr/bin/env bash
# The operator console: an agent with --http on loopback, freqctl attached at
# XDP on a veth (lib.sh) and Debian's nginx with the module, all on scratch
# paths. Every endpoint and error path of the API; each accepted write
# enforced at XDP (BPF_PROG_TEST_RUN through bpftool on the attached program)
# and in nginx; then the page in Debian's chromium, driven headless by
# playwright-core (tests/browser/console.mjs), with a screenshot kept in
# build/test-output/. The agent and nginx are stopped by their pids.
. "$(dirname "$0")/lib.sh"
d=/tmp/fc-it-$tag
port=$(fc_port 0) # the console (its TLS twin: fc_port 1)
web=$(fc_port 2)  # nginx
apid=
tpid=
stop_ours() {
	[ -n "$apid" ] && kill -TERM "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	[ -n "$tpid" ] && kill -TERM "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null
	rm -rf "$pin-tls" "$pin-tls2"
	fc_nginx_stop
}
trap 'stop_ours; fc_finish' EXIT
why=$(fc_nginx_missing)
[ -z "$why" ] || skip_all "$why"
fc_setup
check "attach xdp" fcq attach "$host" --mode xdp
prog=$(xdp_hook_prog)
fc_nginx_start "127.0.0.1:$web" || skip_all "nginx did not start"
# Not through fc(): $! must be the agent's own pid.
"$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" agent --http "127.0.0.1:$port" --token-file "$d/token" \
	>"$d/agent.log" 2>&1 &
apid=$!
for _ in $(seq 50); do grep -q "watching store" "$d/agent.log" && break; sleep 0.1; done
check "the agent serves the console" grep -q "serving the console at http://127.0.0.1:$port/" "$d/agent.log"
check "the token file is made 0600" [ "$(stat -c %a "$d/token")" = 600 ]
token=$(fc console-token --token-file "$d/token")
check "console-token prints it: 64 hex digits" grep -qxE '[0-9a-f]{64}' <<<"$token"
token_missing() {
	local out rc
	out=$(fc console-token --token-file "$d/none" 2>&1)
	rc=$?
	[ "$rc" = 1 ] && grep -q 'the agent makes it when started with --http' <<<"$out"
}
check "console-token without the file: exit 1, saying how it is made" token_missing
chmod 0644 "$d/token"
check "a token file others can read is refused, naming the mode it needs" \
	sh -c "! '$FC_BIN' console-token --token-file '$d/token' >/dev/null 2>&1 &&
		'$FC_BIN' console-token --token-file '$d/token' 2>&1 | grep -q 'mode 0600'"
chmod 0600 "$d/token"

U=http://127.0.0.1:$port
# api METHOD PATH [BODY]: prints "STATUS BODY"
api() {
	local out
	out=$(curl -s --max-time 5 -w '\n%{http_code}' -X "$1" -H "Authorization: Bearer $token" \
		${3:+-H 'Content-Type: application/json' --data-binary "$3"} "$U$2")
	echo "$(tail -n1 <<<"$out") $(sed '$d' <<<"$out")"
}
status_is() { [ "${1%% *}" = "$2" ]; }
body_has() { jq_true "$2" <<<"${1#* }"; }
# The verdict of freqctl's attached XDP program on one ICMP echo from
# 198.18.0.SRC, by BPF_PROG_TEST_RUN: 1 XDP_DROP, 2 XDP_PASS.
xdp_verdict() {
	printf '\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00\x45\x00\x00\x1c\x00\x00\x40\x00\x40\x01\x00\x00\xc6\x12\x00'"$(printf '\\x%02x' "$1")"'\xc6\x12\x00\x01\x08\x00\xf7\xff\x00\x00\x00\x00' >"$d/frame"
	bpftool prog run id "$prog" data_in "$d/frame" repeat 1 2>&1 | sed -n 's/^Return value: \([0-9]*\).*/\1/p'
}
get() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$web/?uid=$1"; }
within_100ms() {
	local i
	for i in $(seq 20); do "$@" && return 0; sleep 0.005; done
	return 1
}
verdict_is() { [ "$(xdp_verdict "$1")" = "$2" ]; }
verdicts_are() { [ "$(xdp_verdict "$1") $(xdp_verdict "$1") $(xdp_verdict "$1")" = "$2" ]; }
http_is() { [ "$(get "$1")" = "$2" ]; }
https_are() { [ "$(get "$1") $(get "$1") $(get "$1")" = "$2" ]; }
no_store_change() { [ "$(curl -s -H "Authorization: Bearer $token" "$U/api/policies" | jq -c '[.policies[].id]')" = "$1" ]; }

# Access.
check "no token: 401 with WWW-Authenticate" sh -c "curl -s -D - -o /dev/null '$U/api/policies' | grep -qi '^WWW-Authenticate: Bearer'"
# The token with its last digit changed (to 0, or to 1 where it was 0: one
# token in 16 ends in 0, and the "wrong" one was the right one).
wrong=${token%?}0
[ "$wrong" != "$token" ] || wrong=${token%?}1
r=$(curl -s -w ' %{http_code}' -H "Authorization: Bearer $wrong" "$U/api/stats")
check "a wrong token: 401" [ "${r##* }" = 401 ]
check "the page is served without one, with a strict CSP" sh -c "curl -s -D - -o /dev/null '$U/' | grep -qi \"^Content-Security-Policy: default-src 'self'\""
check "... and so are its script and style" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$U/console.js')\$(curl -s -o /dev/null -w '%{http_code}' '$U/console.css')\" = 200200 ]"
r=$(api GET /nowhere)
check "an unknown path: 404" status_is "$r" 404
r=$(api PATCH /api/policies)
check "a wrong method: 405" status_is "$r" 405
check "the console binds where told: nothing on the veth address" sh -c "! curl -s --max-time 1 -o /dev/null 'http://$host4:$port/'"
# DNS rebinding: a page elsewhere resolving its own name to 127.0.0.1.
r=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: rebind.example:$port" -H "Authorization: Bearer $token" "$U/api/policies")
check "a Host naming another server: 403, even with the token" [ "$r" = 403 ]
check "... the page too" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Host: rebind.example:$port" "$U/")" = 403 ]
check "... and another port is not this server" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Host: 127.0.0.1:1" "$U/")" = 403 ]
check "localhost is this server" [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Host: localhost:$port" "$U/")" = 200 ]

# Policies.
r=$(api GET /api/policies)
check "GET /api/policies: 200, none yet" body_has "$r" '.policies == []'
# Policy 7 is a window aligned to UTC minutes: from here to the last check
# on 198.18.0.78 (some 20 s, the stalled client alone 10) is one minute.
away_from_minute_edge 50
r=$(api POST /api/policies '{"id": 7, "match": "ip=198.18.0.78", "rates": ["2/m"], "algo": "window"}')
check "POST a policy: 201" status_is "$r" 201
check "... enforced at XDP within 100 ms: 198.18.0.78 passes twice, then is dropped" within_100ms verdicts_are 78 "2 2 1"
r=$(api POST /api/policies '{"id": 8, "match": "uid=u8", "rates": ["2/m"]}')
check "POST an nginx policy: 201" status_is "$r" 201
check "... enforced in nginx: 200, 200, then 429" within_100ms https_are u8 "200 200 429"
check "... and another uid is not limited" http_is u9 200
r=$(api POST /api/policies '{"id": 9, "match": "uid=u9", "rates": ["10/x"]}')
check "an invalid rate: 400 with the CLI's message and the field" \
	body_has "$r" '.error == "policy 9: rate \"10/x\": unit must be one of s, m, h, d" and .field == "rates[0]"'
cli=$("$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" policy add 9 --match uid=u9 --rate 10/x 2>&1 | head -1)
check "... the same message as the CLI ($cli)" [ "$cli" = 'freqctl: policy 9: rate "10/x": unit must be one of s, m, h, d' ]
r=$(api POST /api/policies '{"id": 9, "match": "uid=u9", "rates": ["1/s"], "colour": "red"}')
check "an unknown key: 400 naming it" body_has "$r" '.field == "colour"'
r=$(api POST /api/policies '{"id": 9, "match": "uid=u9",')
check "bad JSON: 400 with line and column" body_has "$r" '.error | startswith("body: line 1, column")'
r=$(api POST /api/policies '[1, 2]')
check "JSON that is not an object: 400" status_is "$r" 400
r=$(api POST /api/policies '{"id": 10, "match": "ip=198.18.0.78", "rates": ["1/s"]}')
check "a match another policy has: 409" body_has "$r" '.field == "match" and (.error | contains("already limited at XDP/TC by policy 7"))'
r=$(api POST /api/policies '{"id": 7, "match": "ip=198.18.0.79", "rates": ["1/s"]}')
check "POST an existing id: 409, saying PUT replaces it" body_has "$r" '.error == "policy 7: exists; PUT /api/policies/7 replaces it"'
check "none of the refused writes changed the store" no_store_change '[7,8]'
r=$(api GET /api/policies/8)
check "GET /api/policies/8: the policy" body_has "$r" '.id == 8 and .match == "uid=u8" and .layer == "nginx" and .count == "requests"'
check "... override: false" body_has "$r" '.override == false'
r=$(api PUT /api/policies/8 '{"match": "uid=u8", "rates": ["2/m"], "override": true}')
check "PUT with \"override\": true: 200, and GET says so" \
	sh -c "[ \"\$(curl -s -H 'Authorization: Bearer $token' '$U/api/policies/8' | jq .override)\" = true ]"
r=$(api PUT /api/policies/8 '{"match": "uid=u8", "rates": ["2/m"], "override": "yes"}')
check "\"override\": \"yes\": 400 naming the key" body_has "$r" '.field == "override" and .error == "policy 8: override: expected true or false"'
r=$(api PUT /api/policies/8 '{"match": "uid=u8", "rates": ["2/m"], "override": true, "action": "log"}')
check "override with action log: 400 saying why" body_has "$r" '.error | contains("a dry run")'
api PUT /api/policies/8 '{"match": "uid=u8", "rates": ["2/m"], "override": true, "fleet": true}' >/dev/null
r=$(api GET /api/policies/8)
check "PUT with \"fleet\": true, and GET says so" body_has "$r" '.fleet == true and .override == true'
r=$(api PUT /api/policies/8 '{"match": "uid=u8", "rates": ["2/m", "100/d"], "fleet": true}')
check "fleet with two rates: 400 saying why" body_has "$r" '.error | contains("--fleet takes one --rate")'
api PUT /api/policies/8 '{"match": "uid=u8", "rates": ["2/m"], "override": true}' >/dev/null
r=$(api GET /api/policies/8)
check "PUT without \"fleet\": the rate is each node's again" body_has "$r" '.fleet == false'
r=$(api GET /api/policies/99)
check "GET an unknown id: 404" status_is "$r" 404
r=$(api GET /api/policies/x7)
check "GET a malformed id: 400" status_is "$r" 400
r=$(api PUT /api/policies/7 '{"match": "ip=198.18.0.78", "rates": ["5/m"], "algo": "window"}')
check "PUT replaces: 200" body_has "$r" '.rates == ["5/m"]'
check "... enforced at XDP: 198.18.0.78 has room again under 5/m" verdict_is 78 2
r=$(api PUT /api/policies/7 '{"id": 8, "match": "uid=u7", "rates": ["1/s"]}')
check "PUT with another id in the body: 400" body_has "$r" '.field == "id"'
r=$(api PUT /api/policies/11 '{"match": "uid=u11", "rates": ["1/m"]}')
check "PUT a new id creates it: 201" status_is "$r" 201
r=$(api DELETE /api/policies/8)
check "DELETE: 204" status_is "$r" 204
check "... no longer enforced in nginx" within_100ms http_is u8 200
r=$(api DELETE /api/policies/8)
check "DELETE again: 404" status_is "$r" 404

# Bans.
r=$(api POST /api/bans '{"ban": "198.18.0.77", "ttl": "1h"}')
check "POST a ban: 201" body_has "$r" '.ban == "198.18.0.77" and .ttl == 3600'
check "... enforced at XDP within 100 ms" within_100ms verdict_is 77 1
r=$(api POST /api/bans '{"ban": "uid=bob"}')
check "POST a uid ban: 201" status_is "$r" 201
check "... enforced in nginx: 403" within_100ms http_is bob 403
r=$(api POST /api/bans '{"ban": "uid=bob", "ttl": "1h"}')
check "a TTL over a ban of no expiry: 409, saying what is there (as ban add without --force)" body_has "$r" \
	'.error == "ban add uid=bob: already banned with no expiry: a ban for 1h would lift it sooner; --force replaces it" and .field == "ttl"'
check "... 409" status_is "$r" 409
r=$(api POST /api/bans '{"ban": "uid=bob", "ttl": "1h", "force": true}')
check "... with \"force\": true, replaced: 200" status_is "$r" 200
r=$(api POST /api/bans '{"ban": "uid=bob", "force": "yes"}')
check "... force takes true or false only: 400" sh -c "[ '${r%% *}' = 400 ]"
r=$(api POST /api/bans '{"ban": "uid=bob"}')
check "... and back to no expiry: 200" status_is "$r" 200
r=$(api POST /api/bans '{"ban": "10.0.0.5/8"}')
check "a bad prefix: 400 with the CLI's message" body_has "$r" '.error == "\"10.0.0.5/8\": host bits set; did you mean 10.0.0.0/8?" and .field == "ban"'
r=$(api POST /api/bans '{"ban": "198.18.0.76", "ttl": "10x"}')
check "a bad TTL: 400 naming ttl" body_has "$r" '.field == "ttl"'
r=$(api GET /api/bans)
check "GET /api/bans: both, with TTL and reason" body_has "$r" '[.bans[].ban] == ["198.18.0.77", "uid=bob"] and .bans[0].ttl_remaining > 3500 and .bans[0].escalated_by_policy == null'
# Allow entries beat the ban above.
r=$(api POST /api/allows '{"allow": "198.18.0.77", "ttl": "1h", "note": "partner"}')
check "POST an allow entry: 201" body_has "$r" '.allow == "198.18.0.77" and .ttl == 3600'
check "... the banned address passes at XDP within 100 ms" within_100ms verdict_is 77 2
r=$(api POST /api/allows '{"allow": "198.18.0.77/8"}')
check "a bad allow entry: 400 naming allow" body_has "$r" '.field == "allow"'
r=$(api POST /api/allows '{"allow": "198.18.0.75", "note": "a\tb"}')
check "a bad note: 400 naming note" body_has "$r" '.field == "note" and (.error | contains("control characters"))'
r=$(api POST /api/allows '{"allow": "198.18.0.75", "ban": "x"}')
check "an unknown key: 400 naming it" body_has "$r" '.field == "ban"'
r=$(api GET /api/bans)
check "GET /api/bans: the ban names the entry that overrides it" body_has "$r" '[.bans[] | select(.ban == "198.18.0.77") | .allowed_by] == ["198.18.0.77"]'
r=$(api GET /api/allows)
check "GET /api/allows: with its TTL and note" body_has "$r" '[.allows[] | [.allow, .note]] == [["198.18.0.77", "partner"]] and .allows[0].ttl_remaining > 3500'
r=$(api DELETE /api/allows/198.18.0.77)
check "DELETE an allow entry: 204" status_is "$r" 204
check "... banned at XDP again" within_100ms verdict_is 77 1
r=$(api DELETE /api/allows/198.18.0.77)
check "DELETE it again: 404" status_is "$r" 404
r=$(api DELETE /api/bans/198.18.0.77)
check "DELETE a ban: 204" status_is "$r" 204
check "... lifted at XDP" within_100ms verdict_is 77 2
r=$(api DELETE /api/bans/uid=bob)
check "DELETE a uid ban: 204" status_is "$r" 204
check "... lifted in nginx" within_100ms http_is bob 200
r=$(api DELETE /api/bans/198.18.0.0%2F24)
check "DELETE a ban that is not there: 404" status_is "$r" 404

# Counters.
r=$(api GET /api/stats)
check "GET /api/stats: per policy and layer, counted" body_has "$r" '.node != null and .version != null and (.keys | type) == "array" and ([.policies[] | select(.id == 7) | .layer == "xdp" and .passed >= 3 and .denied >= 1] == [true])'
check "... and nginx's refusals by bans: bob's by a uid ban, none by an address ban" \
	body_has "$r" '.nginx.banned_uid >= 1 and .nginx.banned_address == 0 and .nginx.allowed == 0'
# A per-key policy that keeps its busiest keys' values, and a busy key
# whose value is markup: shown as text (the browser test below looks too).
r=$(api POST /api/policies '{"id": 13, "match": "uid=*,arg:sk=1", "rates": ["100/h"], "show_keys": true}')
check "POST a policy with show_keys: 201" body_has "$r" '.show_keys == true'
for _ in $(seq 64); do echo "url = \"http://127.0.0.1:$web/?uid=%3Cb%3Ex%3C%2Fb%3E&sk=1\""; echo "output = /dev/null"; done |
	curl -s -K - >/dev/null
sleep 1.1 # the console scans the key table once a second at most
r=$(api GET /api/stats)
check "GET /api/stats: the busy key by its value, escaped as freqctl keys shows it" \
	body_has "$r" '[.keys[] | select(.policy == 13) | .value] == [{"text": "<b>x</b>", "cut": false}]'
if command -v python3 >/dev/null && id www-data >/dev/null 2>&1; then
	check "a worker (www-data) writes counters past INT64_MAX into policy 11's slot" forge_counters 11
	r=$(api GET /api/stats)
	check "... GET /api/stats: INT64_MAX, no negative number" body_has "$r" \
		'([.policies[] | select(.id == 11) | .passed == 9223372036854775807 and .denied == 9223372036854775807] == [true]) and
		 ([.. | numbers | select(. < 0)] | length == 0)'
else
	skip_one "python3 or the www-data user missing (forged counters)"
	skip_one "python3 or the www-data user missing"
fi
r=$(curl -s -H "Authorization: Bearer $token" "$U/metrics")
check "GET /metrics: the Prometheus text" grep -q '^freqctl_agent_publishes_total ' <<<"$r"

# One store connection for every request: the console's threads open the
# store's files (the database and its WAL) at most once here. SQLite may
# reuse a process's descriptor for the database file, never for the WAL,
# so both are counted. The agent's own publishes, on its main thread, open
# the store afresh by design and are not counted.
if command -v strace >/dev/null; then
	strace -f -qq -e trace=openat -o "$d/strace" -p "$apid" 2>/dev/null &
	spid=$!
	for _ in $(seq 50); do grep -q 'TracerPid:[[:space:]]*[1-9]' "/proc/$apid/status" && break; sleep 0.1; done
	for i in 1 2 3 4 5; do
		api GET /api/stats >/dev/null
		api GET /api/policies >/dev/null
		api GET /api/bans >/dev/null
		api POST /api/bans "{\"ban\": \"198.18.7.$i\"}" >/dev/null
		api DELETE "/api/bans/198.18.7.$i" >/dev/null
	done
	kill -INT "$spid"
	wait "$spid" 2>/dev/null
	opens=$(grep -v "^$apid " "$d/strace" | grep -cE "\"$db(-wal)?\"")
	check "25 requests, reads and writes: the console opened the store's files $opens times (kept: at most 2)" \
		[ "$opens" -le 2 ]
else
	skip_one "the console's kept store connection: strace not installed"
fi

# Abuse: none of it disturbs enforcement.
r=$(head -c 70000 /dev/zero | curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" --data-binary @- "$U/api/policies")
check "a body over 64 KiB: 413" [ "$r" = 413 ]
r=$(head -c 70000 /dev/zero | curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" -H 'Transfer-Encoding: chunked' --data-binary @- "$U/api/policies")
check "... also chunked, without a length: 413" [ "$r" = 413 ]
exec 7<>"/dev/tcp/127.0.0.1/$port" # a slow client that never finishes its request
printf 'GET /api/stats HTTP/1.1\r\nHost: x\r\n' >&7
r=$(api GET /api/policies)
check "a stalled client holds nothing up" status_is "$r" 200
check "... and is cut off after the 10 s timeout" timeout 15 sh -c 'cat <&7 >/dev/null'
exec 7>&-
check "enforcement unchanged through all of it: 198.18.0.78 still limited (5/m: 2 more, then dropped)" verdicts_are 78 "2 2 1"

# Messages are JSON, whatever the client sent: bytes that are not UTF-8,
# and a message cut where a character is longer than one byte.
r=$(api POST /api/policies "$(printf '{"id": 12, "match": "uid=\\u00e9\\u00e9\\u00e9", "rates": ["1/x"]}')")
check "a message with a non-ASCII input: 400 as JSON, naming it" body_has "$r" '.field == "match" and (.error | contains("uid=ééé"))'
long=$(printf 'é%.0s' $(seq 40))
r=$(api POST /api/bans "{\"ban\": \"uid=$long$long$long$long\"}")
check "a message cut inside a character: still JSON" body_has "$r" '.field == "ban"'
r=$(printf 'POST /api/bans HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{"ban": "\377\376"}' "$port" "$token" |
	timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port; cat >&3; cat <&3" | head -1)
check "a body that is not UTF-8: answered 400, not dropped" grep -q '^HTTP/1.1 400' <<<"$r"
check "every write is logged: who (peer, token tag), what, the outcome" \
	grep -qE 'console: 127\.0\.0\.1, token #[0-9a-f]{8}: POST /api/policies \(policy 7\) -> 201' "$d/agent.log"
check "... refusals too" grep -qE 'console: 127\.0\.0\.1, token #[0-9a-f]{8}: DELETE /api/policies/8 -> 404' "$d/agent.log"

# TLS: a second agent (a store, pin dir and shm of its own) serving https.
t=$d/tls
mkdir -p "$t"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$t/key.pem" -out "$t/cert.pem" -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
tport=$(fc_port 1)
# Not through a function: $! must be the agent's own pid.
"$FC_BIN" --db "$t/store.db" --pin-dir "$pin-tls" --shm "$t/shm" agent --http "127.0.0.1:$tport" --token-file "$t/token" --http-cert "$t/cert.pem" --http-key "$t/key.pem" \
	>"$t/agent.log" 2>&1 &
tpid=$!
for _ in $(seq 50); do grep -q "watching store" "$t/agent.log" && break; sleep 0.1; done
r=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$t/cert.pem" -H "Authorization: Bearer $(cat "$t/token")" "https://127.0.0.1:$tport/api/policies")
check "--http-cert, --http-key: the API over TLS ($r)" [ "$r" = 200 ]
check "... and not in the clear" sh -c "! curl -s -o /dev/null --max-time 2 'http://127.0.0.1:$tport/api/policies'"
kill -TERM "$tpid" && wait "$tpid"
tpid=
rm -rf "$pin-tls"
check "beyond loopback without TLS: refused, saying what to do" \
	sh -c "'$FC_BIN' --db '$t/store2.db' --pin-dir '$pin-tls2' --shm '$t/shm2' agent --http '$host4:$tport' \
		--token-file '$t/token' 2>&1 | grep -q 'serve TLS (--http-cert, --http-key), or say --http-insecure'"
rm -rf "$pin-tls2"

# The page, in a real browser.
if ! command -v chromium >/dev/null; then
	skip_one "the page in a browser: chromium not installed (Debian chromium)"
elif [ ! -d tests/browser/node_modules/playwright-core ]; then
	skip_one "the page in a browser: playwright-core not installed (npm ci --prefix tests/browser)"
else
	mkdir -p build/test-output
	# The fleet panel: an agent's status, as fleet29c's writes it, with
	# markup where a node's name goes (names are the store's, text only).
	# A round a minute: still fresh while the browser gets to it.
	cat >"$shm.fleet.json" <<'JSON'
{"node": "<b>n1</b>", "node_no": 1, "mode": "degraded", "reason": "clock 812 ms from Redis (max 500)",
 "since": "2026-11-29T06:00:00.000Z", "rounds": 42, "last_sync": "2026-11-29T06:00:04.200Z", "interval_ms": 60000,
 "redis": {"mode": "cluster", "wait": 1, "primaries": [{"addr": "127.0.0.1:16009", "slots": 16384, "replicas": 1, "state": "up"}]},
 "nodes": [{"name": "<b>n1</b>", "no": 1, "weight": 0.25, "in_set": true, "mode": "degraded", "age_ms": 300}],
 "policies": [{"id": 77, "algo": "window", "limit": 100, "unit": "d", "window": 20421, "fleet_used": 61,
   "node_used": 20, "credit": 5, "tracked": 3, "demanding": 1, "done": 0, "grants": 9, "releases": 2, "donated": 0}],
 "counters": {"commands": 120}}
JSON
	out=$(FC_URL="$U/" FC_TOKEN="$token" FC_SHOT=build/test-output/console.png FC_WEB="http://127.0.0.1:$web" \
		timeout 120 node tests/browser/console.mjs 2>&1)
	tap_relay <<<"$out" || check "the browser test ran" false
fi
exit 0
