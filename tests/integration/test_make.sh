#!/usr/bin/env bash
# What make builds and what each make target installs (issue 28, item 5: a
# first look that is light): `make` builds what is installed (the binary,
# the nginx module, the man pages) and no test, tool, fuzzer or benchmark;
# `make all-dev` builds those too; `make demo` installs only what the demo
# uses: no browser, no database server, no npm package. Reads the Makefile
# and the package lists with make -n and install-deps.sh --list: no root,
# nothing built or installed.
. "$(dirname "$0")/lib.sh"
command -v make >/dev/null || skip_all "make not installed"
deps=tools/build/install-deps.sh
dir=/tmp/fc-it-$tag
mkdir -p "$dir"

# The commands make would run for GOAL..., every target made afresh (-B).
plan() { make -n -B --no-print-directory "$@" 2>/dev/null; }
# none FILE ERE: no line of FILE matches ERE (what matches is shown).
none() {
	local m
	m=$(grep -E -- "$2" "$1")
	[ -z "$m" ] || { sed 's/^/# /' <<<"$m" | head -3; return 1; }
}

plan >"$dir/make"
check "make (the default goal) builds the binary" grep -q -- '-o build/freqctl ' "$dir/make"
check "... the nginx module" grep -q 'build-ngx-module.sh build' "$dir/make"
check "... the man pages" grep -q 'scdoc < doc/freqctl.8.scd' "$dir/make"
check "... and no test, tool, fuzzer or benchmark" \
	none "$dir/make" '-o build/(tests|fuzz|tools)/|-o build/fc_(bench|l7_bench|agent_bench|redis_probe) |bench_empty|-fsanitize'
plan all-dev >"$dir/all-dev"
for t in build/tests/test_store build/tests/test_prog build/fuzz/fuzz_l7 build/fc_bench build/tests/fc_redis_it; do
	check "make all-dev builds $t" grep -q -- "-o $t\b" "$dir/all-dev"
done
plan build/freqctl build/ngx_http_freqctl_module.so >"$dir/demo-build"
check "make demo builds the binary and the module, nothing else" \
	sh -c "grep -qx '	@\$(MAKE) --no-print-directory \$(B)/freqctl \$(NGX_MODULE)' Makefile &&
		! grep -qE -- '-o build/(tests|fuzz)/|scdoc' '$dir/demo-build'"

"$deps" --list demo >"$dir/demo"
check "install-deps.sh --list demo lists packages" [ "$(wc -l <"$dir/demo")" -ge 10 ]
check "make demo's packages name no browser" none "$dir/demo" '^(chromium.*|firefox.*|epiphany.*|google-chrome.*)$'
check "... no database server" \
	none "$dir/demo" '^(postgresql(-[0-9]+)?|mariadb-server.*|mysql-server.*|redis-server|sqlite3)$'
check "... no npm package (nor npm, nor Node.js)" none "$dir/demo" '^(npm:.*|npm|nodejs)$'
for p in iproute2 iputils-ping nginx curl nginx-dev clang; do
	check "... and what it builds and runs with: $p" grep -qx "$p" "$dir/demo"
done
"$deps" --list build | grep -vx scdoc >"$dir/build"
for s in demo test bench fuzz; do
	"$deps" --list "$s" >"$dir/$s"
	grep -vxF -f "$dir/$s" "$dir/build" >"$dir/$s.lacks"
	check "make $s's set holds make's (build, the man pages' scdoc aside)" none "$dir/$s.lacks" .
done
check "make test's set has the browser test's npm package" grep -qx 'npm:playwright-core' "$dir/test"
"$deps" --list deb >"$dir/deb"
check "make deb's set: debhelper, dpkg-dev, lintian; no browser, database server or npm package" \
	sh -c "grep -qx debhelper '$dir/deb' && grep -qx lintian '$dir/deb' &&
	       ! grep -qE '^(chromium|postgresql|redis-server|npm:.*)$' '$dir/deb'"
"$deps" --list nope >/dev/null 2>"$dir/err"
check "an unknown set is refused (exit 2), naming the sets" \
	sh -c "[ $? = 2 ] && grep -q 'build, demo, test, bench, fuzz, deb, check' '$dir/err'"
