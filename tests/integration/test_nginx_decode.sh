#!/usr/bin/env bash
# L7 values are matched as the application behind nginx reads them, so the
# spellings frameworks read alike meet one policy: arguments percent-decoded
# (names too), an argument or header given twice matches if either copy
# does, the uid from $arg_uid decoded as well, and a uri without its ';'
# parameters and, for an exact uri=, a trailing '/' (test_nginx_uid.sh: the
# uid's and the names' spellings); an empty key value is a key. Real nginx serving a file; the nginx
# started here is stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (nginx as www-data, the shm's group)"
why=$(fc_nginx_missing)
[ -z "$why" ] || skip_all "$why"
trap 'fc_nginx_stop; fc_finish' EXIT
port=$(fc_port)

get() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
u="http://127.0.0.1:$port/"

fc policy add 1 --match arg:api=login --rate 3/m --burst 3 >/dev/null
fc policy add 2 --match uid=u1 --rate 1/m --burst 1 >/dev/null
fc policy add 3 --match header:X-Key=k --rate 1/m --burst 1 >/dev/null
fc policy add 4 --match uri=/login --rate 2/m --burst 2 >/dev/null
fc policy add 5 --match 'arg:e=*' --rate 1/m --burst 1 >/dev/null
FC_NGX_SERVER="location /login { try_files /index.html =404; }" \
	fc_nginx_start "127.0.0.1:$port" || skip_all "nginx did not start"

got="$(get "$u?api=%6Cogin") $(get "$u?api=x&api=login") $(get "$u?%61pi=lo%67in")"
check "arg:api=login charged for %6Cogin, a second api=, an escaped name ($got)" [ "$got" = "200 200 200" ]
got=$(get "$u?api=login")
check "... so the plain spelling is the 4th: refused ($got)" [ "$got" = 429 ]
got="$(get "$u?api=LOGIN") $(get "$u?apix=login") $(get "$u?api=log+in")"
check "other values and names stay apart ($got)" [ "$got" = "200 200 200" ]
got="$(get "$u?uid=u%31") $(get "$u?uid=u1")"
check "uid=u1 charged for ?uid=u%31 (\$arg_uid is decoded) ($got)" [ "$got" = "200 429" ]
got="$(get -H 'X-Key: a' -H 'X-Key: k' "$u") $(get -H 'x-key: k' "$u")"
check "a header sent twice matches if either line does ($got)" [ "$got" = "200 429" ]
got="$(get "$u"login/) $(get "$u"'login;jsessionid=1') $(get "$u"login) $(get "$u"login2)"
check "uri=/login 2/m: /login/ and /login;jsessionid=1 are /login: the third is refused, /login2 is not ($got)" \
	[ "$got" = "200 200 429 200" ]
# Unlike limit_req, a present but empty key is limited (freqctl-policy(7)).
got="$(get "$u?e=") $(get "$u?e") $(get "$u?e=x") $(get "$u?e=x")"
check "arg:e=* 1/m: ?e= and ?e share the empty value's bucket, ?e=x has its own ($got)" [ "$got" = "200 429 200 429" ]
exit 0
