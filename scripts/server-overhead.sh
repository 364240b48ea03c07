#!/usr/bin/env bash
# The server's own overhead on a one-tool turn, in instructions (valgrind's callgrind), which do
# not depend on the machine's load: httpapi's BenchmarkTurn through the engine (Ask) and through
# the server (POST, then run_stopped on the thread's SSE stream), each run with 20 and with 220
# turns so that the difference over 200 is one turn; the setup the benchmark does outside its
# timer (BenchmarkTurnSetup: creating threads, opening streams) is measured the same way and
# subtracted.
#
#   scripts/server-overhead.sh
set -euo pipefail
cd "$(dirname "$0")/../httpapi"
bin=$(mktemp -d)/httpapi.test
go test -c -o "$bin" .
count() { # BENCH N -> instructions
  GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$bin" -test.run '^$' -test.bench "^$1\$" -test.benchtime "$2x" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per() { echo $(( ($(count "$1" 220) - $(count "$1" 20)) / 200 )); }
engine=$(per BenchmarkTurn/engine)
server=$(per BenchmarkTurn/server)
threads=$(per BenchmarkTurnSetup/threads)
streams=$(per BenchmarkTurnSetup/streams)
e=$((engine - threads))
s=$((server - streams))
echo "engine turn: $e instructions"
echo "server turn: $s instructions"
awk -v s="$s" -v e="$e" 'BEGIN { printf "server / engine: %.3f\n", s / e }'
rm -rf "$(dirname "$bin")"
