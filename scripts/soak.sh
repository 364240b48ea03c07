#!/usr/bin/env bash
# Crash soak: the real `weft serve` on a SQLite file, SIGKILLed KILLS times (default 1,000) at
# random points of first runs and of resumes, restarted each time, with conversations of
# non-idempotent tool calls, attachments in flight and SSE subscribers. A fake OpenAI-compatible
# model answers from the history it receives. It fails on any lost message, tool run twice, stuck
# thread, orphan file or incomplete stream, and prints the figures. CI runs 100 kills
# (TestServeCrashSIGKILL in go test); with WEFT_TEST_POSTGRES_URL set, add --cluster to also run
# the three-node PostgreSQL test with THREADS conversations (default 300).
#
#   scripts/soak.sh [KILLS] [--cluster [THREADS]]
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-1000}"
export WEFT_SERVE_KILLS="$kills"
go test -count=1 -timeout 120m -run '^TestServeCrashSIGKILL$' -v ./cmd/weft/ | grep -E 'SIGKILL|^(--- |ok|FAIL)'
if [ "${2:-}" = "--cluster" ]; then
  export WEFT_CLUSTER_THREADS="${3:-300}"
  go test -count=1 -timeout 60m -run '^TestClusterSIGKILL$' -v ./cmd/weft/ | grep -E 'threads|killed|^(--- |ok|FAIL)'
fi
