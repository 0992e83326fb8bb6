#!/usr/bin/env bash
# Installs the Debian packages of the package sets named, when any is
# missing (needs root: apt-get; does nothing when all are there):
#
#   build  what `make` builds with: the binary, the nginx module, the man pages
#   demo   what `make demo` builds and runs: the binary, the module, a
#          namespace, ping, nginx and curl (no browser, no database server,
#          no npm package: tests/integration/test_make.sh holds it to that)
#   test   what `make test` runs besides: cmocka, PostgreSQL, Redis, nginx,
#          chromium and, from npm, the console's browser test driver
#          (playwright-core, pinned by tests/browser/package-lock.json)
#   bench  what `make bench` compares against (wrk, Redis, valgrind)
#   fuzz   what `make fuzz` builds the fuzzers with (clang's runtimes)
#   deb    what `make deb` builds and checks the Debian packages with
#   check  what `make check` builds and runs with (no root, no network)
#
#   tools/build/install-deps.sh [--check | --list] SET...
#
# --check installs nothing: says which packages are missing, and fails if
# any is. --list prints the sets' packages, one a line, those from npm as
# npm:NAME.
set -euo pipefail

build=(make gcc clang llvm pkg-config libbpf-dev libxdp-dev bpftool libelf-dev zlib1g-dev
	libsqlite3-dev libpq-dev libjansson-dev libmicrohttpd-dev libhiredis-dev nginx-dev scdoc)
# The demo builds the binary and the module, not the man pages.
demo=("${build[@]/scdoc/}" iproute2 iputils-ping nginx curl)
test=("${build[@]}" libcmocka-dev libclang-rt-dev
	sqlite3 postgresql postgresql-client
	iproute2 iputils-ping jq xdp-tools netcat-openbsd
	redis-server redis-tools
	nginx curl
	debhelper dpkg-dev lintian man-db strace
	bash-completion
	chromium)
bench=("${build[@]}" nginx curl wrk redis-server redis-tools bc valgrind postgresql jq)
fuzz=("${build[@]}" libclang-rt-dev)
deb=("${build[@]}" debhelper dpkg-dev lintian)
check=(make gcc clang llvm pkg-config libclang-rt-dev libbpf-dev bpftool libelf-dev zlib1g-dev
	libsqlite3-dev libpq-dev libjansson-dev libcmocka-dev libmicrohttpd-dev libhiredis-dev scdoc)

mode=install
case ${1:-} in
--check | --list)
	mode=${1#--}
	shift
	;;
esac
[ $# -gt 0 ] || { echo "usage: $0 [--check | --list] build|demo|test|bench|fuzz|deb|check..." >&2; exit 2; }

pkgs=() npm=()
for set in "$@"; do
	case $set in
	build | demo | test | bench | fuzz | deb | check) ;;
	*) echo "install-deps.sh: no package set \"$set\" (build, demo, test, bench, fuzz, deb, check)" >&2; exit 2 ;;
	esac
	declare -n list=$set
	for p in "${list[@]}"; do
		[ -n "$p" ] && pkgs+=("$p")
	done
	unset -n list
	if [ "$set" = test ]; then
		# Node.js: Debian's, unless one is there already (playwright-core needs 18+).
		command -v node >/dev/null || pkgs+=(nodejs npm)
		npm+=(playwright-core)
	fi
done
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)

if [ "$mode" = list ]; then
	printf '%s\n' "${pkgs[@]}"
	[ ${#npm[@]} -eq 0 ] || printf 'npm:%s\n' "${npm[@]}"
	exit 0
fi

# Whether Debian package $1 is installed.
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ "$mode" = check ]; then
	[ ${#missing[@]} -eq 0 ] && exit 0
	echo "freqctl: make $* needs ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "freqctl: installing ${missing[*]}" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "freqctl: installing packages needs root: sudo apt-get install ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
browser=$(dirname "$0")/../../tests/browser
if [ ${#npm[@]} -gt 0 ] && [ ! -d "$browser/node_modules/playwright-core" ]; then
	echo "freqctl: installing playwright-core for the console's browser test (npm ci)" >&2
	npm ci --prefix "$browser" --no-audit --no-fund --loglevel=error >/dev/null
fi
