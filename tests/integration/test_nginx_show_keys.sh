#!/usr/bin/env bash
# --show-keys in a real nginx: a policy that opts in keeps the values of its
# busiest and most refused keys, shown escaped by freqctl keys and top (text
# and --json); one that does not say (a header's keys here) keeps none, not
# a byte of them in the state file, which only root and the workers read.
# Real nginx serving files, two workers; stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag

# many N PATH [curl args]: N requests in one curl process (a process start
# costs up to 500 ms here), their bodies dropped.
many() {
	local n=$1 path=$2
	shift 2
	for _ in $(seq "$n"); do printf 'url = "%s"\noutput = /dev/null\n' "$ngx_url$path"; done | curl -s "$@" -K -
}

fcq policy add 1 --match 'uid=*' --rate 100/h --show-keys
fcq policy add 2 --match 'header:X-Api-Key=*' --rate 100/h
fcq policy add 3 --match 'uid=*,arg:login=1' --rate 1/h --show-keys
FC_NGX_WORKERS=2 fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"

# A client's uid with a quote, a control byte and a right-to-left override;
# 64 requests: its value is noted at the 64th pass.
many 63 '/?uid=mal%22l%01ory%E2%80%AE'
check "a key passed 63 times: no value yet" \
	jq_true '.[0].passed == 63 and .[0].value == null' <<<"$(fc keys 1 --json)"
many 1 '/?uid=mal%22l%01ory%E2%80%AE'
check "its 64th pass: its value, escaped (keys --json)" \
	jq_true '.[0].passed == 64 and .[0].value == {"text": "mal\\\"l\\x01ory\\xe2\\x80\\xae", "cut": false}' <<<"$(fc keys 1 --json)"
check "... and in keys' text, in quotes" \
	sh -c "'$FC_BIN' --db '$db' --pin-dir '$pin' --shm '$shm' keys 1 | grep -qF '\"mal\\\"l\\x01ory\\xe2\\x80\\xae\"'"
# A value longer than 64 bytes: kept cut.
long=$(printf 'y%.0s' $(seq 100))
many 64 "/?uid=$long"
check "a value of 100 bytes: its first 64, said to be cut" \
	jq_true --arg v "${long:0:64}" '[.[] | select(.passed == 64 and .value.text == $v) | .value.cut] == [true]' \
	<<<"$(fc keys 1 --json)"
# The most refused: at a key's first refusal.
check "uid=*,arg:login=1 1/h: bob once, then refused" [ "$(codes 2 '/?uid=bob&login=1')" = "200 429" ]
check "... bob's value kept at his first refusal" \
	jq_true '.[0].denied == 1 and .[0].value == {"text": "bob", "cut": false}' <<<"$(fc keys 3 --json)"
top=$(timeout 20 "$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" top -n 5 -d 0.1 --json)
check "top --json: the busiest keys by value" \
	jq_true '[.keys[] | select(.policy == 3) | .value.text] == ["bob"] and
		([.keys[] | select(.policy == 1) | .value.text] | index("mal\\\"l\\x01ory\\xe2\\x80\\xae") != null)' <<<"$top"
# top's text shows 36 bytes of a value at most, cutting no escape: 34
# bytes, then \x01 (4 more) left out.
z=$(printf 'z%.0s' $(seq 34))
many 64 "/?uid=$z%01"
toptext=$(timeout 20 "$FC_BIN" --db "$db" --pin-dir "$pin" --shm "$shm" top -n 1 -r 10)
check "top's text: bob in quotes" grep -Eq '^"bob" +3 ' <<<"$toptext"
check "... a long value: 36 bytes, then ..." grep -Eq "^\"${long:0:36}\"\.\.\. +1 " <<<"$toptext"
check "... an escape not cut: 34 bytes, then ..." grep -Eq "^\"$z\"\.\.\. +1 " <<<"$toptext"

# A header's keys, the policy silent about --show-keys: none kept.
many 70 / -H 'X-Api-Key: s3cret-Ab9'
check "a header's key, 70 requests, no --show-keys: no value" \
	jq_true '.[0].passed == 70 and .[0].value == null' <<<"$(fc keys 2 --json)"
check "... not a byte of it in the state file" sh -c "! grep -q s3cret-Ab9 '$shm.state'"
# lib.sh's chmod -R a+rX made it readable by all before nginx started: a
# publish puts it back to root and the workers' group alone.
chmod o+r "$shm.state"
fcq sync
check "the state file after a publish: root and the workers' group alone ($(stat -c '%a %U:%G' "$shm.state"))" \
	[ "$(stat -c '%a %U:%G' "$shm.state")" = "660 root:www-data" ]
# Opting in later: its busy key's value is noted from then on.
fcq policy edit 2 --show-keys
many 64 / -H 'X-Api-Key: s3cret-Ab9'
check "policy edit 2 --show-keys: the header's value kept from then on" \
	jq_true '.[0].value == {"text": "s3cret-Ab9", "cut": false}' <<<"$(fc keys 2 --json)"
fcq policy edit 2 --no-show-keys
check "... --no-show-keys: shown no more" jq_true '.[0].value == null' <<<"$(fc keys 2 --json)"
exit 0
