#!/usr/bin/env bash
# make install / make uninstall into a DESTDIR, then the Debian packages for
# real: built by make deb (lintian clean), installed on this machine,
# checked (files, --version, man -w, the module enabled the Debian way and
# loaded by nginx -t, the unit verified); attached to a veth by the
# installed freqctl with the settings of /etc/default/freqctl (scratch
# paths), upgraded in place (still attached), removed (detached, its maps
# and shm gone, or the removal refused with what to run), purged (the
# store kept, and said so), and nothing left.
# tests/run.sh: alone: the removal refuses while any freqctl program is attached in the namespace, as another suite's would be.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "needs root (dpkg -i)"
for t in dpkg-buildpackage dh lintian scdoc nginx; do
	command -v "$t" >/dev/null || skip_all "$t not installed (make deps installs it)"
done

dir=/tmp/fc-it-$tag
dest=$dir/dest
mkdir -p "$dest"
version=$(cat VERSION)
pkgs=(freqctl libnginx-mod-http-freqctl)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
ours= # set once this test installed the packages: only then does cleanup purge them

made_var= # set while /var/lib/freqctl is one this test made
cleanup() {
	rm -f "/etc/nginx/conf.d/fc-it-$tag.conf"
	[ -z "$ours" ] || [ ! -x /usr/sbin/freqctl ] || inst2 detach --all --unpublish >/dev/null 2>&1
	[ -n "$ours" ] && dpkg --purge "${pkgs[@]}" >/dev/null 2>&1
	[ -z "$made_var" ] || rmdir /var/lib/freqctl
	fc_finish
}
trap cleanup EXIT

# ---- make install / uninstall ----
make -s install DESTDIR="$dest" PREFIX=/usr/local >"$dir/install.log" 2>&1
check "make install DESTDIR= PREFIX=/usr/local" [ $? = 0 ]
check "... the binary, in PREFIX/sbin" [ -x "$dest/usr/local/sbin/freqctl" ]
check "... the module, in nginx's module directory" [ -f "$dest/usr/lib/nginx/modules/ngx_http_freqctl_module.so" ]
check "... its load file, in modules-available" \
	grep -qx 'load_module /usr/lib/nginx/modules/ngx_http_freqctl_module.so;' \
	"$dest/usr/share/nginx/modules-available/mod-http-freqctl.conf"
check "... the unit, starting the installed binary" \
	grep -qx 'ExecStart=/usr/local/sbin/freqctl agent --quiet' "$dest/usr/local/lib/systemd/system/freqctl-agent.service"
check "... the man pages" [ -f "$dest/usr/local/share/man/man8/freqctl.8" ]
check "... the bash completion" [ -f "$dest/usr/local/share/bash-completion/completions/freqctl" ]
make -s uninstall DESTDIR="$dest" PREFIX=/usr/local >>"$dir/install.log" 2>&1
check "make uninstall removes every file it installed" [ -z "$(find "$dest" -type f)" ]

# ---- the packages ----
for p in "${pkgs[@]}"; do
	installed "$p" && skip_all "package $p is installed on this machine: not replacing it"
done
[ -e /etc/default/freqctl ] && skip_all "/etc/default/freqctl is there: the package would take it over"
command -v ping >/dev/null || skip_all "ping not installed (Debian iputils-ping)"
# The module's package asks a running nginx to reload (dpkg-trigger nginx-reload).
[ -s /run/nginx.pid ] && kill -0 "$(cat /run/nginx.pid)" 2>/dev/null &&
	skip_all "the system's nginx runs (/run/nginx.pid): installing the module's package would reload it"

debs=$(tools/pkg/build-deb.sh "$dir/deb" 2>"$dir/deb.log")
arch=$(dpkg --print-architecture)
check "make deb builds both packages, lintian finds no errors" \
	test -f "$dir/deb/freqctl_${version}_$arch.deb" -a -f "$dir/deb/libnginx-mod-http-freqctl_${version}_$arch.deb"
check "... nor the warnings Debian's policy asks to fix: no command by its path in a maintainer script" \
	sh -c "! grep -E 'command-with-path-in-maintainer-script' '$dir/deb/lintian.log'"
check "the module's package depends on the nginx ABI it was built against" \
	sh -c "dpkg-deb -f '$dir/deb/libnginx-mod-http-freqctl_${version}_'*.deb Depends | grep -q 'nginx-abi-'"

ours=1
# shellcheck disable=SC2086
dpkg -i $(grep -v dbgsym <<<"$debs") >"$dir/dpkg.log" 2>&1
check "dpkg -i installs both" sh -c "dpkg-query -W -f='\${Status}\n' ${pkgs[*]} | grep -c 'install ok installed' | grep -qx 2"
files=$(dpkg -L "${pkgs[@]}" | sort -u)
check "freqctl --version says $version" [ "$(/usr/sbin/freqctl --version)" = "freqctl $version" ]
check "man -w freqctl" [ "$(man -w freqctl 2>/dev/null)" = /usr/share/man/man8/freqctl.8.gz ]
check "bash completion in place" [ -f /usr/share/bash-completion/completions/freqctl ]
check "the module is enabled the Debian way" \
	[ "$(readlink /etc/nginx/modules-enabled/50-mod-http-freqctl.conf)" = /usr/share/nginx/modules-available/mod-http-freqctl.conf ]
# nginx -t on a configuration that loads what modules-enabled lists and uses
# a directive only the module knows.
cat >"$dir/nginx.conf" <<CONF
include /etc/nginx/modules-enabled/*.conf;
pid $dir/nginx.pid;
error_log $dir/error.log;
events {}
http { freqctl_shm $dir/shm; server { listen 127.0.0.1:$(fc_port 0); location / { freqctl on; } } }
CONF
# nginx's own prefix, where Debian's "modules/" leads to the module directory.
check "nginx -t loads the module and takes its directives" nginx -t -q -c "$dir/nginx.conf" -e "$dir/error.log"
if command -v systemd-analyze >/dev/null; then
	check "systemd-analyze verify the unit" systemd-analyze verify /lib/systemd/system/freqctl-agent.service
else
	skip_one "systemd-analyze verify: systemd not installed here"
fi

# ---- removed while attached: taken off the interfaces, nothing left enforcing ----
check "/etc/default/freqctl installed, all comments" sh -c "[ -f /etc/default/freqctl ] && ! grep -qv '^#' /etc/default/freqctl"
# One that does not read it would attach below with the machine's own pin
# dir and store: stop there.
check "the installed freqctl reads it" jq_true '.configuration.file == "/etc/default/freqctl"' \
	<<<"$(FREQCTL_CONFIG=/etc/default/freqctl /usr/sbin/freqctl --db "$db" --pin-dir "$pin" --shm "$shm" status --json)" ||
	exit 1
# Scratch paths only, in the file the package's scripts read as the agent does.
printf 'FREQCTL_DB=%s\nFREQCTL_PIN_DIR=%s\nFREQCTL_SHM=%s\n' "$db" "$pin" "$shm" >/etc/default/freqctl
inst() { FREQCTL_CONFIG=/etc/default/freqctl /usr/sbin/freqctl "$@"; }
fc_setup
check "the installed freqctl attaches (its settings from /etc/default/freqctl)" quiet inst attach "$host" --mode xdp
check "... and bans $peer4" quiet inst ban add "$peer4"
check "... pings from it dropped" [ "$(pings 4 3)" = 0 ]
# shellcheck disable=SC2086
dpkg -i $(grep -v dbgsym <<<"$debs") >>"$dir/dpkg.log" 2>&1
check "an upgrade (the same packages again) leaves it attached" [ "$(pings 4 3)" = 0 ]
chown nobody "$pin"
dpkg -r freqctl >"$dir/remove.log" 2>&1
check "removal refused while freqctl can not be taken off (a pin dir root refuses)" installed freqctl
check "... saying what to run" grep -q "freqctl: not removed: .* 'freqctl detach --all --unpublish' once the cause is fixed" "$dir/remove.log"
check "... still enforcing" [ "$(pings 4 3)" = 0 ]
chown root "$pin"
# A second instance (its own pin dir, as FREQCTL_PIN_DIR allows): the
# removal may not leave its program enforcing with no freqctl left.
inst2() { FREQCTL_PIN_DIR="$pin-2" FREQCTL_SHM="$shm-2" FREQCTL_DB="$db-2" inst "$@"; }
check "a second instance at TC on $host (another pin dir)" quiet inst2 attach "$host" --mode tc
dpkg -r freqctl >"$dir/remove.log" 2>&1
check "removal refused while another pin dir's program is attached" installed freqctl
check "... naming it" grep -q "freqctl: not removed: freqctl's programs of another pin dir are still attached to: $host (tc)" "$dir/remove.log"
check "the second instance detached" quiet inst2 detach --all --unpublish
check "the first attached again (the refused removal took it off), its ban published at once" \
	quiet inst attach "$host" --mode xdp
check "... pings from $peer4 dropped" [ "$(pings 4 3)" = 0 ]
dpkg -r freqctl >"$dir/remove.log" 2>&1
check "dpkg -r freqctl, attached" sh -c "! dpkg-query -W -f='\${Status}' freqctl 2>/dev/null | grep -q 'install ok installed'"
check "... detached it from $host, saying so" grep -q "detached from $host (xdp mode" "$dir/remove.log"
check "... no program left on $host" [ "$(ip -j link show dev "$host" | jq -r '.[0].xdp.prog.id // empty')" = "" ]
check "... pings pass again" [ "$(pings 4 3)" = 3 ]
check "... the maps unpinned, the pin dir gone" [ ! -e "$pin" ]
check "... the shm gone (nginx lets requests pass)" [ ! -e "$shm" -a ! -e "$shm.state" ]
check "... the store kept" jq_true --arg b "$peer4" 'map(.ban) == [$b]' <<<"$(fc ban list --json)"
# The store's place made if the machine has none (and removed after), so
# that what purge says of it is always checked.
[ -e /var/lib/freqctl ] || { mkdir -m 0750 /var/lib/freqctl && made_var=1; }
dpkg --purge freqctl >"$dir/purge.log" 2>&1
check "dpkg --purge says it keeps /var/lib/freqctl" grep -q "freqctl: purge keeps /var/lib/freqctl, the policy store" "$dir/purge.log"
check "... and keeps it" [ -d /var/lib/freqctl ]
[ -z "$made_var" ] || { rmdir /var/lib/freqctl && made_var=; }
check "... /etc/default/freqctl purged" [ ! -e /etc/default/freqctl ]

# The module's removal while a site uses it: nginx would not start again.
site=/etc/nginx/conf.d/fc-it-$tag.conf
printf '# freqctl_shm in a comment does not count\nfreqctl_shm %s;\n' "$shm" >"$site"
dpkg -r libnginx-mod-http-freqctl >"$dir/remove.log" 2>&1
check "the module's removal refused while nginx's configuration uses it" installed libnginx-mod-http-freqctl
check "... naming the file" grep -q "libnginx-mod-http-freqctl: not removed: nginx's configuration uses the module in $site" "$dir/remove.log"
rm -f "$site"

dpkg --purge "${pkgs[@]}" >>"$dir/dpkg.log" 2>&1
ours=
check "dpkg --purge removes both" sh -c "! dpkg-query -W -f='\${Status}\n' ${pkgs[*]} 2>/dev/null | grep -q installed"
left=
for f in $files; do
	if [ ! -d "$f" ] && { [ -e "$f" ] || [ -L "$f" ]; }; then left="$left $f"; fi
done
check "nothing the packages installed is left${left:+:$left}" [ -z "$left" ]
check "the module's modules-enabled link is gone" \
	test ! -e /etc/nginx/modules-enabled/50-mod-http-freqctl.conf -a ! -L /etc/nginx/modules-enabled/50-mod-http-freqctl.conf
