#!/usr/bin/env bash
# The user id nginx decides on is the one the application reads: freqctl
# reads $cookie_NAME, $arg_NAME and $http_NAME itself, every copy of the name
# (in any case, percent-escaped, PHP's spellings, a name ended at a NUL as
# PHP ends it, every Cookie line, a quoted cookie as Python unquotes it too,
# a query's ';' pairs), and a uid given more than once is refused if any
# copy is banned, allowed only if every copy is, charged to the overflow
# bucket of a per-user policy and matches a fixed uid if any copy does; an
# allow entry also needs one exact copy, that every application reads as the
# uid (a lone UID=partner is no uid to a case-sensitive one). A map variable
# is taken as nginx gives it. arg:NAME and header:NAME read names the same
# way. Real nginx serving files; stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag
for l in a c h m w; do
	mkdir -p "$d/html/$l/k" "$d/html/$l/p" "$d/html/$l/n"
	echo ok >"$d/html/$l/f"
	echo ok >"$d/html/$l/k/f"
	echo ok >"$d/html/$l/p/f"
	echo ok >"$d/html/$l/n/f"
done

fcq ban add uid=bob
fcq allow add uid=partner
fcq policy add 1 --match 'uid=*,uri=/a/k/*' --rate 2/h
fcq policy add 2 --match 'uid=*,uri=/c/k/*' --rate 2/h
fcq policy add 3 --match 'uid=*,uri=/h/k/*' --rate 2/h
fcq policy add 4 --match 'uid=carol' --rate 1/h
fcq policy add 5 --match 'ip=*,uri=/c/p/*' --rate 1/h
fcq policy add 6 --match 'arg:api_key=k6' --rate 1/h
fcq policy add 7 --match 'arg:Mode=m7' --rate 1/h
fcq policy add 8 --match 'header:X-Tok=*' --rate 1/h
fcq policy add 9 --match 'ip=*,uri=/a/p/*' --rate 1/h
fcq policy add 10 --match 'ip=*,uri=/h/p/*' --rate 1/h
fcq policy add 11 --match 'ip=*,uri=/w/p/*' --rate 1/h
fcq policy add 12 --match 'uid=*,uri=/a/n/*' --rate 2/h
fcq policy add 13 --match 'uid=*,uri=/c/n/*' --rate 2/h
FC_NGX_ACCESS_LOG="log_format fc '\$uri \$status \$freqctl_status'; access_log $d/logs/access.log fc;" \
	FC_NGX_HTTP="map \$http_x_m \$m_uid { default \$http_x_m; }" \
	FC_NGX_SERVER="underscores_in_headers on; listen 127.0.0.1:$(fc_port 1) http2;
	    location /c/ { freqctl_uid \$cookie_uid; }
	    location /h/ { freqctl_uid \$http_x_user; }
	    location /m/ { freqctl_uid \$m_uid; }
	    location /w/ { freqctl_uid \$cookie_UID; }" \
	fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"
get() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
u=$ngx_url

# ban uid=bob: refused whatever else the request carries, however spelled.
got="$(get -b 'UID=x; uid=bob' "$u/c/f") $(get -b 'uid=y; uid=bob' "$u/c/f")"
check "Cookie: UID=x; uid=bob and uid=y; uid=bob: banned ($got)" [ "$got" = "403 403" ]
got="$(get "$u/a/f?UID=z&uid=bob") $(get "$u/a/f?uid=z&uid=bob") $(get "$u/a/f?uid=bob&UID=z")"
check "?UID=z&uid=bob, ?uid=z&uid=bob, ?uid=bob&UID=z: banned ($got)" [ "$got" = "403 403 403" ]
got="$(get "$u/a/f?%75id=bob") $(get "$u/a/f?%55Id=z&uid=x&%75%69%64=bob") $(get -b '%75id=bob' "$u/c/f")"
check "a percent-escaped name (?%75id=bob, Cookie: %75id=bob): banned ($got)" [ "$got" = "403 403 403" ]
got="$(get "$u/a/f?x=1;uid=bob") $(get "$u/a/f?uid=z;uid=bob") $(get "$u/a/f?+uid=bob") $(get "$u/a/f?uid%5B%5D=bob")"
check "?x=1;uid=bob (Rack), ?+uid=bob (PHP), ?uid[]=bob (an array): banned ($got)" [ "$got" = "403 403 403 403" ]
got="$(get "$u/a/f?uid=&uid=bob") $(get "$u/a/f?uid&uid=bob") $(get "$u/a/f?uid=bob&uid=")"
check "an empty copy beside bob: banned ($got)" [ "$got" = "403 403 403" ]
got="$(get -b 'uid="bob"' "$u/c/f") $(get -H 'Cookie:  uid = bob ; a=1' "$u/c/f") $(get -b 'a=1, uid=bob' "$u/c/f") $(get -b 'uid=x, uid=bob' "$u/c/f")"
check "Cookie: uid=\"bob\", ' uid = bob ', 'a=1, uid=bob', 'uid=x, uid=bob': banned ($got)" [ "$got" = "403 403 403 403" ]
got="$(get -H 'Cookie: uid=x' -H 'Cookie: uid=bob' "$u/c/f") $(get -H 'Cookie: uid=bob' -H 'Cookie: uid=x' "$u/c/f")"
check "Cookie split in two header lines, bob in either: banned ($got)" [ "$got" = "403 403" ]
# HTTP/2 sends a cookie per header field (RFC 9113 8.2.3); nginx joins them.
h2() { curl -s -o /dev/null -w '%{http_version}:%{http_code}' --http2-prior-knowledge "$@"; }
u2=http://127.0.0.1:$(fc_port 1)
got="$(h2 -H 'Cookie: uid=x' -H 'Cookie: uid=bob' "$u2/c/f") $(h2 -H 'Cookie: uid=bob' -H 'Cookie: UID=x' "$u2/c/f")"
check "HTTP/2, cookie fields uid=x + uid=bob, uid=bob + UID=x: banned ($got)" [ "$got" = "2:403 2:403" ]
long=$(for i in $(seq 600); do printf 'uid=x%d; ' "$i"; done)
got="$(get -H "Cookie: ${long}uid=bob" "$u/c/f") $(get -H "Cookie: ${long}a=b" "$u/c/f")"
check "a 7 KB Cookie of 600 copies, bob the last: banned; without bob: not ($got)" [ "$got" = "403 200" ]
got="$(get -H 'X-User: x' -H 'X-User: bob' "$u/h/f") $(get -H 'X-User: x' -H 'X_User: bob' "$u/h/f") $(get -H 'x-user: bob' "$u/h/f")"
check "\$http_x_user: X-User sent twice, X_User, x-user: banned ($got)" [ "$got" = "403 403 403" ]

# PHP reads a name as a C string (php_register_variable_ex): ?uid%00=bob
# and ?uid%00x=bob are its $_GET['uid'].
got="$(get "$u/a/f?uid%00=bob") $(get "$u/a/f?uid%00x=bob") $(get "$u/a/f?uid=partner&uid%00=bob")"
check "?uid%00=bob, ?uid%00x=bob, ?uid=partner&uid%00=bob (uid to PHP): banned ($got)" [ "$got" = "403 403 403" ]
check "... logged BANNED, not ALLOWED" [ "$(tail -n 3 "$d/logs/access.log" | grep -c '^/a/f 403 BANNED$')" = 3 ]
got=$(for i in 1 2 3 4 5; do get "$u/a/n/f?uid=n$i&uid%00=eve"; echo -n " "; done)
check "?uid=nN&uid%00=eve, N = 1..5, under uid=* 2/h: the overflow bucket, 2 pass (${got% })" [ "${got% }" = "200 200 429 429 429" ]
# Python's http.cookies (Django, Werkzeug) unquotes "...": \ooo in octal,
# \c as c.
got="$(get -b 'uid="\142ob"' "$u/c/f") $(get -b 'uid="b\ob"' "$u/c/f") $(get -b 'a=1; uid="\142\157\142"' "$u/c/f")"
check "Cookie: uid=\"\\142ob\", uid=\"b\\ob\", uid=\"\\142\\157\\142\" (bob to Python): banned ($got)" [ "$got" = "403 403 403" ]
got=$(for s in '"\141lice"' '"a\lice"' '"al\ice"' '"ali\ce"' '"alic\e"' '"\141\154ice"'; do get -b "uid=$s" "$u/c/n/f"; echo -n " "; done)
check "uid=* 2/h on \$cookie_uid walked with alice's Python spellings: the overflow bucket, 2 pass (${got% })" \
	[ "${got% }" = "200 200 429 429 429 429" ]

# Not a copy: a longer name, a value holding the name, another name.
got="$(get -b 'uid2=bob; xuid=bob; a=uid=bob' "$u/c/f") $(get "$u/a/f?uid2=bob&xuid=bob&a=uid%3Dbob") $(get "$u/a/f?uid=bobby")"
check "uid2=, xuid=, a=uid=bob, uid=bobby are not bob ($got)" [ "$got" = "200 200 200" ]

# uid=* 2/h: a uid given twice (or under UID too) goes to the overflow
# bucket, never to a fresh key of its own.
got=$(for i in 1 2 3 4 5; do get "$u/a/k/f?Uid=n$i&uid=alice"; echo -n " "; done)
check "?Uid=nN&uid=alice, N = 1..5, under uid=* 2/h: the overflow bucket, 2 pass (${got% })" [ "${got% }" = "200 200 429 429 429" ]
got=$(for i in 1 2 3; do get "$u/a/k/f?uid=alice"; echo -n " "; done)
check "... alice's own bucket is untouched (${got% })" [ "${got% }" = "200 200 429" ]
got=$(for i in 1 2 3 4; do get -b "uid=a$i; UID=b$i" "$u/c/k/f"; echo -n " "; done)
check "Cookie: uid=aN; UID=bN: the overflow bucket too (${got% })" [ "${got% }" = "200 200 429 429" ]
got=$(for i in 1 2 3 4; do get -H "X-User: a$i" -H "X-User: b$i" "$u/h/k/f"; echo -n " "; done)
check "X-User sent twice: the overflow bucket too (${got% })" [ "${got% }" = "200 200 429 429" ]
got=$(for i in 1 2 3; do get -b 'UID=dave' "$u/c/k/f"; echo -n " "; done)
check "a lone copy in another case (UID=dave) is the uid: dave's bucket (${got% })" [ "${got% }" = "200 200 429" ]

# uid=carol 1/h: any copy matches.
got="$(get "$u/a/f?uid=x&UID=carol") $(get "$u/a/f?uid=carol")"
check "uid=carol 1/h: ?uid=x&UID=carol is charged, so ?uid=carol is refused ($got)" [ "$got" = "200 429" ]

# allow uid=partner: only when every copy is partner, and one is exact.
# ip=* 1/h on each /X/p/: once spent, a request not allowed is refused.
got=$(for i in 1 2 3; do get -b 'UID=partner; uid=attacker' "$u/c/p/f"; echo -n " "; done)
check "Cookie: UID=partner; uid=attacker is not allowed: ip=* 1/h applies (${got% })" [ "${got% }" = "200 429 429" ]
got="$(get -b 'uid=partner' "$u/c/p/f") $(get -b 'uid=partner; UID=partner' "$u/c/p/f")"
check "... uid=partner, and partner twice, are allowed ($got)" [ "$got" = "200 200" ]
got="$(get -b 'UID=partner' "$u/c/p/f") $(get -b 'u.id=partner; %75id=partner' "$u/c/p/f")"
got="$got $(get -b 'uid="partner"' "$u/c/p/f") $(get -H 'Cookie: a=1, uid=partner' "$u/c/p/f")"
check "... a lone respelled copy (UID=, %75id=, quoted, after ',') is not ($got)" [ "$got" = "429 429 429 429" ]
check "... logged ALLOWED only for those, REJECTED for the others" \
	[ "$(grep -c '^/c/p/f 200 ALLOWED$' "$d/logs/access.log") $(grep -c '^/c/p/f 429 REJECTED$' "$d/logs/access.log")" = "2 6" ]
got="$(h2 -H 'Cookie: a=1' -H 'Cookie: uid=partner' "$u2/c/p/f") $(h2 -H 'Cookie: UID=partner' -H 'Cookie: uid=attacker' "$u2/c/p/f")"
got="$got $(h2 -H 'Cookie: UID=partner' "$u2/c/p/f")"
check "HTTP/2: cookie fields a=1 + uid=partner allowed; UID=partner + uid=attacker, a lone UID=partner not ($got)" \
	[ "$got" = "2:200 2:429 2:429" ]
got="$(get -b 'uid="p\artner"' "$u/c/p/f") $(get -b 'uid=partner; uid="p\artner"' "$u/c/p/f")"
check "allow uid=partner: uid=\"p\\artner\", alone or beside uid=partner, is not allowed ($got)" [ "$got" = "429 429" ]
got="$(get "$u/a/p/f?uid=attacker") $(get "$u/a/p/f?UID=partner") $(get -g "$u/a/p/f?uid[x]=partner")"
got="$got $(get "$u/a/p/f?x=1;uid=partner") $(get "$u/a/p/f?uid=partner;x=1") $(get "$u/a/p/f?+uid=partner")"
check "?UID=partner, ?uid[x]=partner, ?x=1;uid=partner, ?uid=partner;x=1, ?+uid=partner: not allowed ($got)" \
	[ "$got" = "200 429 429 429 429 429" ]
got="$(get "$u/a/p/f?uid=partner") $(get "$u/a/p/f?%75id=partner") $(get "$u/a/p/f?UID=partner&uid=partner")"
check "... ?uid=partner, ?%75id=partner, ?UID=partner&uid=partner: allowed ($got)" [ "$got" = "200 200 200" ]
check "... logged so" [ "$(grep -c '^/a/p/f 200 ALLOWED$' "$d/logs/access.log") $(grep -c '^/a/p/f 429 REJECTED$' "$d/logs/access.log")" = "3 5" ]
got="$(get -H 'X-User: x' "$u/h/p/f") $(get -H 'X_User: partner' "$u/h/p/f") $(get -H 'x-USER: partner' "$u/h/p/f")"
check "\$http_x_user: a lone X_User: partner is not allowed, x-USER: partner is ($got)" [ "$got" = "200 429 200" ]
got="$(get -b 'uid=x' "$u/w/p/f") $(get -b 'uid=partner' "$u/w/p/f") $(get -b 'UID=partner' "$u/w/p/f")"
check "freqctl_uid \$cookie_UID: the name as written, UID=partner allowed, uid=partner not ($got)" [ "$got" = "200 429 200" ]

# A map variable is nginx's value, unchanged (not decoded).
got="$(get -H 'X-M: b%6Fb' "$u/m/f") $(get -H 'X-M: bob' "$u/m/f")"
check "freqctl_uid \$m_uid (a map): b%6Fb is not bob, bob is ($got)" [ "$got" = "200 403" ]

# arg:NAME reads names as the uid's are read.
got="$(get "$u/a/f?api.key=k6") $(get "$u/a/f?api_key=k6")"
check "arg:api_key=k6 1/h: ?api.key=k6 (PHP's api_key) is charged ($got)" [ "$got" = "200 429" ]
got="$(get "$u/a/f?mode=m7") $(get "$u/a/f?MODE=m7") $(get "$u/a/f?x=1;Mode=m7")"
check "arg:Mode=m7 1/h: ?mode=m7 charged, so MODE= and ;Mode= are refused ($got)" [ "$got" = "200 429 429" ]
got="$(get -H 'X-Tok: t1' "$u/a/f") $(get -H 'X_Tok: t1' "$u/a/f")"
check "header:X-Tok=* 1/h: X_Tok (as \$http_x_tok reads it) is X-Tok ($got)" [ "$got" = "200 429" ]
# Whether a copy is exact is looked at only while an allow entry names a
# uid: one deleted and added again live is enforced at once, exactly.
fcq allow del uid=partner
check "allow del uid=partner: ?uid=partner is refused within 100 ms (ip=* 1/h)" status_within_100ms 429 "/a/p/f?uid=partner"
fcq allow add uid=partner
check "allow add uid=partner again: ?uid=partner allowed within 100 ms" status_within_100ms 200 "/a/p/f?uid=partner"
got="$(get "$u/a/p/f?UID=partner") $(get "$u/a/p/f?uid=partner&uid=x") $(get "$u/a/p/f?uid=partner")"
check "... ?UID=partner, ?uid=partner&uid=x still not; ?uid=partner is ($got)" [ "$got" = "429 429 200" ]
# The uid as logged: the client's decoded bytes, escaped, so that none can
# end the log line and write one of its own.
got=$(get "$u/a/f?uid=bob&uid=x%0A2026/11/29%2004:00:00%20%5Berror%5D%2099%2399:%20FORGED%22%00")
check "a banned uid beside a copy holding a new line: banned ($got)" [ "$got" = 403 ]
check "... no line of the client's own in error.log" sh -c "! grep -q '^2026/11/29 04:00:00 \\[error\\] 99#99: FORGED' '$d/logs/error.log'"
check "... the copy logged escaped" grep -qF 'banned, uid "bob", "x\x0a2026/11/29 04:00:00 [error] 99#99: FORGED\x22\x00"' "$d/logs/error.log"
check "no worker crashed" sh -c "! grep -q 'exited on signal' '$d/logs/error.log'"
exit 0
