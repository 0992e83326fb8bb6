#!/usr/bin/env bash
# Runs every test suite (`make test` calls this after building) and ends with
# one line "N passed, N failed, N skipped" counting test cases over all suites.
#
# Every suite speaks TAP: the cmocka binaries (CMOCKA_MESSAGE_OUTPUT=TAP) and
# the shell suites (tests/integration/lib.sh). A suite fails if any test is
# "not ok", if it exits non-zero, if it prints no plan, or if the tests it
# printed are not the plan's count (it died half-way).
set -u
cd "$(dirname "$0")/.."

passed=0 failed=0 skipped=0
failed_suites=()

# Reads a suite's TAP from stdin; prints "passed failed skipped problem".
tap_count() {
	awk '
	/^1\.\.[0-9]+/ { plan = $1; sub(/^1\.\./, "", plan); planned = 1; if ($0 ~ /# *[Ss][Kk][Ii][Pp]/) skipall = 1; next }
	/^(not )?ok [0-9]+( |$)/ {
		n++
		if ($0 ~ /# *[Ss][Kk][Ii][Pp]/) s++
		else if ($0 ~ /^ok/) p++
		else f++
	}
	END {
		why = "-"
		if (!planned) why = "no-plan"
		else if (plan + 0 != n) why = "plan-" plan "-ran-" n
		if (skipall && n == 0) s = 1
		printf "%d %d %d %s\n", p, f, s, why
	}'
}

run() {
	local name=$1 log rc p f s why
	shift
	log=$(mktemp)
	echo "== $name"
	CMOCKA_MESSAGE_OUTPUT=TAP "$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	read -r p f s why < <(tap_count <"$log")
	rm -f "$log"
	if [ "$why" != - ]; then
		echo "  $name: bad TAP ($why)"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "  $name: exit $rc"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$f" -eq 0 ] || failed_suites+=("$name")
}

# Tests work on scratch pin dirs and shms only; the defaults belong to any
# freqctl this machine really runs. Checked by what they hold before and after.
defaults() { ls -ld --time-style=+%s.%N /sys/fs/bpf/freqctl /dev/shm/freqctl /dev/shm/freqctl.state 2>/dev/null; }
before=$(defaults)

for t in build/tests/test_*; do
	run "$(basename "$t")" "$t"
done
for t in tests/integration/test_*.sh; do
	run "$(basename "$t")" "$t"
done
# Every input the fuzzers kept, crashes found included, once more.
run "fuzz corpora" tools/fuzz.sh --replay

echo "== default pin dir and shm untouched"
if [ "$(defaults)" = "$before" ]; then
	passed=$((passed + 1))
	echo "ok"
else
	failed=$((failed + 1))
	failed_suites+=("defaults")
	echo "not ok: a test created or changed /sys/fs/bpf/freqctl or /dev/shm/freqctl"
fi

# Every agent and nginx a test started must be gone (looked up, never killed, here).
echo "== no test process left behind"
left=$(pgrep -af '(freqctl|nginx).*/tmp/fc-(it|agent|fleet|ngx|abench)-' || true)
if [ -z "$left" ]; then
	passed=$((passed + 1))
	echo "ok"
else
	failed=$((failed + 1))
	failed_suites+=("leftovers")
	echo "not ok: still running: $left"
fi

echo
[ ${#failed_suites[@]} -eq 0 ] || echo "failing suites: ${failed_suites[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
