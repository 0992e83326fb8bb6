#!/usr/bin/env bash
# Runs every test suite (`make test` calls this after building) and ends with
# one line "N passed, N failed, N skipped" counting test cases over all suites.
# A suite that crashes or prints no result counts as one failure.
set -u
cd "$(dirname "$0")/.."

passed=0 failed=0 skipped=0
failed_suites=()

# Adds the counts a suite printed: cmocka's "[  PASSED  ] N test(s)." lines,
# or our shell suites' own "N passed, N failed, N skipped" line.
count() {
	local log=$1 name=$2 rc=$3 p f s
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' "$log" | tail -1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:/\1/p' "$log" | tail -1)
	if [ -z "$p$f" ]; then
		read -r p f s < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$log" | tail -1)
	fi
	if [ -z "${p:-}${f:-}" ]; then
		echo "  $name: no result line (exit $rc)"
		p=0 f=1 s=0
	elif [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
		echo "  $name: exit $rc"
		f=1
	fi
	passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
	[ "${f:-0}" -eq 0 ] || failed_suites+=("$name")
}

run() {
	local name=$1 log
	shift
	log=$(mktemp)
	echo "== $name"
	"$@" >"$log" 2>&1
	local rc=$?
	cat "$log"
	count "$log" "$name" "$rc"
	rm -f "$log"
}

# Tests work on scratch pin dirs and shms only; the defaults belong to any
# freqctl this machine really runs. Checked by what they hold before and after.
defaults() { ls -ld --time-style=+%s.%N /sys/fs/bpf/freqctl /dev/shm/freqctl 2>/dev/null; }
before=$(defaults)

for t in build/tests/test_*; do
	run "$(basename "$t")" "$t"
done
for t in tests/integration/test_*.sh; do
	run "$(basename "$t")" "$t"
done

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
