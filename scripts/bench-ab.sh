#!/usr/bin/env bash
# bench-ab.sh compares one package's benchmarks between a git revision and the working tree.
# It builds both test binaries, then runs them in alternation, ROUNDS times each, so that both see
# the same machine noise, and prints each benchmark's median ns/op, the new/old ratio and the
# fastest run of each. On a shared 2-core machine single runs vary by ±20%: quote ratios from here.
#
#   scripts/bench-ab.sh OLD_REV PKG BENCH_REGEX [BENCHTIME] [ROUNDS]
#   scripts/bench-ab.sh HEAD~1 ./engine/ 'BenchmarkToolTurn/memory' 40000x 9
#
# AB_COPY names test files of PKG to copy from the working tree into the old revision before it is
# built, so that a benchmark written or changed after OLD_REV compares too:
#   AB_COPY=bench_test.go scripts/bench-ab.sh f2a3069 ./engine/ 'BenchmarkToolTurn' 3000x
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,13p' "$0"; exit 2; }
old_rev=$1 pkg=$2 bench=$3 benchtime=${4:-1x} rounds=${5:-7}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

git -C "$root" worktree add --detach -q "$tmp/old" "$old_rev"
for f in ${AB_COPY:-}; do
  cp "$root/${pkg#./}$f" "$tmp/old/${pkg#./}$f"
done
(cd "$tmp/old" && go test -c -o "$tmp/old.test" "$pkg")
(cd "$root" && go test -c -o "$tmp/new.test" "$pkg")

for _ in $(seq "$rounds"); do
  for side in old new; do
    "$tmp/$side.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" -test.benchmem |
      awk -v side="$side" '/^Benchmark/ { print side, $1, $3 }' >> "$tmp/runs"
  done
done

awk '
  { v[$1, $2] = v[$1, $2] " " $3; names[$2] = 1 }
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function least(s,   a, n, i, m) {
    n = split(s, a, " "); m = a[1]
    for (i = 2; i <= n; i++) if (a[i] + 0 < m + 0) m = a[i]
    return m
  }
  END {
    for (b in names) {
      o = median(v["old", b]); n = median(v["new", b])
      printf "%-40s old %12.0f ns  new %12.0f ns  new/old %.3f  (fastest %.0f / %.0f)\n", b, o, n, n / o, least(v["old", b]), least(v["new", b])
    }
  }' "$tmp/runs"
