#!/usr/bin/env bash
# make deb: builds the Debian packages with Debian's tooling (debian/,
# debhelper, dpkg-buildpackage -b) in a copy of the tree under OUT, so the
# build and dpkg-buildpackage's by-products stay out of the checkout, then
# checks them with lintian (no errors allowed). Prints the packages' paths.
# Usage: tools/pkg/build-deb.sh OUT
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
version=$(cat "$top/VERSION")

for t in dpkg-buildpackage dh lintian; do
	command -v "$t" >/dev/null || { echo "build-deb: $t missing (make deb installs debhelper, dpkg-dev, lintian: tools/build/install-deps.sh deb)" >&2; exit 1; }
done
clog=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
[ "$clog" = "$version" ] || {
	echo "build-deb: debian/changelog says $clog, VERSION says $version: add a changelog entry (dch -v $version)" >&2
	exit 1
}

src=$out/freqctl-$version
rm -rf "$src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
# The tree as it is (committed or not), without builds and downloads.
tar -C "$top" --exclude=./build --exclude=./.git --exclude=./tests/browser/node_modules -cf - . | tar -C "$src" -xf -

log=$out/dpkg-buildpackage.log
echo "build-deb: dpkg-buildpackage -b in $src (log: $log)" >&2
(cd "$src" && dpkg-buildpackage -b -us -uc) >"$log" 2>&1 || {
	tail -40 "$log" >&2
	echo "build-deb: dpkg-buildpackage failed, see $log" >&2
	exit 1
}
changes=$(ls "$out"/freqctl_"$version"_*.changes)
lintian --fail-on error "$changes" >"$out/lintian.log" 2>&1 || {
	cat "$out/lintian.log" >&2
	echo "build-deb: lintian found errors" >&2
	exit 1
}
[ -s "$out/lintian.log" ] && sed 's/^/build-deb: lintian: /' "$out/lintian.log" >&2
ls "$out"/*.deb
