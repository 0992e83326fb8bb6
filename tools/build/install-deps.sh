#!/usr/bin/env bash
# Installs the Debian packages freqctl builds, tests and demonstrates with,
# when any is missing, and the console's browser test driver (playwright-core,
# from npm, pinned by tests/browser/package-lock.json); with "bench", also what
# make bench compares against. Needs root (apt-get); does nothing when all are
# there. With --check, installs nothing: says which of the packages make check
# builds with are missing, and fails if any is.
set -euo pipefail

# Whether Debian package $1 is installed.
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

if [ "${1:-}" = --check ]; then
	missing=()
	for p in make gcc clang llvm pkg-config libclang-rt-dev libbpf-dev bpftool libelf-dev zlib1g-dev \
		libsqlite3-dev libpq-dev libjansson-dev libcmocka-dev libmicrohttpd-dev libhiredis-dev scdoc; do
		installed "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && exit 0
	echo "freqctl: make check needs ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi

pkgs=(
	make gcc clang llvm pkg-config libclang-rt-dev
	libbpf-dev libxdp-dev bpftool libelf-dev zlib1g-dev
	libsqlite3-dev libpq-dev libjansson-dev libcmocka-dev libmicrohttpd-dev
	sqlite3 postgresql postgresql-client
	iproute2 iputils-ping jq xdp-tools netcat-openbsd
	libhiredis-dev redis-server redis-tools
	nginx nginx-dev curl
	debhelper dpkg-dev lintian man-db strace
	scdoc bash-completion
	chromium
)
# Node.js: Debian's, unless one is there already (playwright-core needs 18+).
command -v node >/dev/null || pkgs+=(nodejs npm)

[ "${1:-}" = bench ] && pkgs=(wrk redis-server redis-tools bc valgrind)

missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done
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
if [ "${1:-}" != bench ] && [ ! -d "$browser/node_modules/playwright-core" ]; then
	echo "freqctl: installing playwright-core for the console's browser test (npm ci)" >&2
	npm ci --prefix "$browser" --no-audit --no-fund --loglevel=error >/dev/null
fi
