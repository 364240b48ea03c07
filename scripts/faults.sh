#!/bin/sh
# faults.sh — the fault suite of `weft serve`, runnable by a newcomer in a few minutes.
#
#   scripts/faults.sh                 SQLite: SIGKILLs of weft serve and of runs, write faults,
#                                     a full disk (tmpfs, needs root), lost connections, stop tools
#   WEFT_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test scripts/faults.sh
#                                     also: SIGKILLs of PostgreSQL nodes, connections killed mid-run,
#                                     the database restarted (fast and immediate) under two nodes
#
# WEFT_SERVE_KILLS sets how many times weft serve is killed (default here 20; CI's go test runs
# the same tests with 100). Each test prints its figures (kills, threads, tool runs, lost,
# duplicated, interrupted); a test fails on any lost message, any tool run twice, or any result
# answered "interrupted" although its tool had completed. The same tests run in CI (.ci/run runs
# go test ./..., these included).
set -eu
cd "$(dirname "$0")/.."
export WEFT_SHARED_DIR="${WEFT_SHARED_DIR:-$(cd .. && pwd)/shared}"
export WEFT_SERVE_KILLS="${WEFT_SERVE_KILLS:-20}"
if [ "$(id -u)" = 0 ]; then export WEFT_TEST_FS_FAULTS=1; fi
log=$(mktemp)
run() { # package, test regexp
	echo "== go test $1 -run '$2'"
	if ! go test "$1" -run "$2" -count=1 -v >"$log" 2>&1; then
		cat "$log"
		exit 1
	fi
	# The figures: every t.Logf line, and each test's result.
	grep -E '^\s+\S+_test\.go:[0-9]+: |^(--- |ok|PASS|FAIL)' "$log" | grep -v '^=== ' || true
}
run ./engine 'TestWriteFaults|TestFilesystemFaults|TestLostConnectionKeepsToolResult|TestStopToolNotRunAgainAfterCrash|TestRunStartFailureRetried|TestResumeAfterCrash'
run ./cmd/weft 'TestServeCrashSIGKILL|TestCrashResumeSIGKILL'
if [ -n "${WEFT_TEST_POSTGRES_URL:-}" ]; then
	run ./postgres 'TestConnectionsKilledMidRun'
	run ./cmd/weft 'TestClusterSIGKILL|TestClusterPostgresRestart'
else
	echo "== PostgreSQL faults skipped: set WEFT_TEST_POSTGRES_URL to run them"
fi
rm -f "$log"
