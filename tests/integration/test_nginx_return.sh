#!/usr/bin/env bash
# nginx's `return` ends a request in the rewrite phase, before PREACCESS, so
# a location that only returns is never limited (as with limit_req); the
# snippet of ngx_http_freqctl_module(8)'s NOTES, try_files to a named location
# that returns, is. Real nginx; stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite

fc policy add 5 --match 'uid=u5' --rate 2/m >/dev/null
fc policy add 6 --match 'uid=u6' --rate 2/m >/dev/null
# The server reads the module's own variable (where a request keeps what
# was decided, not for configurations) in its rewrite phase, before and
# after /peek's redirect to /index.html (served, so limited there): the request is
# still decided once.
FC_NGX_SERVER="location = /bare { return 200 'pong'; }
	location = /ping { try_files /.freqctl-none @pong; }
	location @pong { return 200 'pong'; }
	if (\$freqctl_internal_ctx) { }
	location = /peek { try_files /.freqctl-none /index.html; }" \
	fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"

got=$(codes 4 '/bare?uid=u5')
check "a location that only returns is not limited ($got)" [ "$got" = "200 200 200 200" ]
got=$(codes 4 '/ping?uid=u5')
check "try_files to a location that returns is ($got)" [ "$got" = "200 200 429 429" ]
got=$(codes 4 '/peek?uid=u6')
check "a configuration that reads \$freqctl_internal_ctx: each request still decided once ($got)" \
	[ "$got" = "200 200 429 429" ]
exit 0
