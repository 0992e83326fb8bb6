#!/usr/bin/env bash
# Builds ngx_bridge/ as a dynamic module for Debian's nginx, from the copy of
# its source that nginx-dev ships, configured with the very flags Debian's
# nginx was built with (they include --with-compat), so `load_module` takes
# it. conf_flags leaves out the C flags (nginx -V: --with-cc-opt='-g -O2 ...'),
# with which nginx's configure alone compiles at -O: the module takes the
# project's CFLAGS and LDFLAGS instead (the Makefile's, -O2 -g by default; a
# package build's hardening flags).
# Usage: tools/build/build-ngx-module.sh BUILD_DIR  (writes BUILD_DIR/ngx_http_freqctl_module.so)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$(cd "$1" && pwd)
src=/usr/share/nginx/src
[ -f "$src/conf_flags" ] || { echo "build-ngx-module: $src/conf_flags missing (Debian nginx-dev)" >&2; exit 1; }

cc_opt="${CFLAGS:--O2 -g} -fPIC"
ld_opt="${LDFLAGS:-} -fPIC"

work=$out/nginx
stamp="$cc_opt | $ld_opt"
if [ ! -f "$work/objs/Makefile" ] || [ "$src/conf_flags" -nt "$work/objs/Makefile" ] ||
	[ "$(cat "$work/.fc_flags" 2>/dev/null)" != "$stamp" ]; then
	rm -rf "$work"
	cp -a "$src" "$work"
	# shellcheck disable=SC1091
	. "$src/conf_flags"
	# Not in configure's environment: a CFLAGS there replaces nginx's
	# warnings (-W -Wall -Werror) instead of adding to them.
	(unset CFLAGS LDFLAGS && cd "$work" && ./configure "${NGX_CONF_FLAGS[@]}" --with-cc-opt="$cc_opt" --with-ld-opt="$ld_opt" \
		--add-dynamic-module="$top/ngx_bridge" >"$out/nginx-configure.log" 2>&1) || {
		echo "build-ngx-module: configure failed, see $out/nginx-configure.log" >&2
		exit 1
	}
	printf '%s\n' "$stamp" >"$work/.fc_flags"
fi
env -u CFLAGS -u LDFLAGS make -s -C "$work" -f objs/Makefile modules >"$out/nginx-make.log" 2>&1 || {
	cat "$out/nginx-make.log" >&2
	exit 1
}
# A new file renamed over the old: an nginx running with the old one mapped
# keeps its own copy (cp would rewrite the pages under it and crash it).
cp "$work/objs/ngx_http_freqctl_module.so" "$out/.ngx_http_freqctl_module.so.new"
mv -f "$out/.ngx_http_freqctl_module.so.new" "$out/ngx_http_freqctl_module.so"
