#!/usr/bin/env bash
# table-ab.sh compares the bench module's table (bench/cmd/table) between a git revision and the
# working tree: it builds both binaries, runs them in alternation, ROUNDS times each with
# -count 1, and prints for each runner its median µs/turn on each side and, for a runner with a
# floor, the median of its per-run ratio to the floor. Both sides see the same machine noise; on a
# shared 2-core machine a single run moves by a third, so quote ratios from here or callgrind.
#
#   scripts/table-ab.sh OLD_REV [RUNNER_REGEX] [ROUNDS]
#   WEFT_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test scripts/table-ab.sh c5bed60 postgres 10
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,9p' "$0"; exit 2; }
old_rev=$1 runners=${2:-.} rounds=${3:-7}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

git -C "$root" worktree add --detach -q "$tmp/old" "$old_rev"
(cd "$tmp/old/bench" && go build -o "$tmp/old.table" ./cmd/table)
(cd "$root/bench" && go build -o "$tmp/new.table" ./cmd/table)

for round in $(seq "$rounds"); do
  for side in old new; do
    # The summary's rows start: runner, store, µs/turn.
    "$tmp/$side.table" -count 1 -run "$runners" 2>/dev/null |
      awk -v side="$side" -v round="$round" '$2 ~ /^(memory|sqlite|postgres)$/ && $3 ~ /^[0-9.]+$/ { print side, round, $1, $2, $3 }' >> "$tmp/runs"
  done
done

# Each store's floor: the runner the table divides by.
awk '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    if (n == 0) return "-"
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  BEGIN { floor["memory"] = "raw"; floor["sqlite"] = "raw-sqlite-4tx"; floor["postgres"] = "raw-postgres-4tx" }
  { side = $1; round = $2; name = $3; store[name] = $4; t[side, round, name] = $5; us[side, name] = us[side, name] " " $5; names[name] = 1; rounds[round] = 1 }
  END {
    for (k in t) {
      split(k, p, SUBSEP); f = floor[store[p[3]]]
      if (f != "" && f != p[3] && ((p[1], p[2], f) in t)) r[p[1], p[3]] = r[p[1], p[3]] " " t[k] / t[p[1], p[2], f]
    }
    printf "%-18s %12s %12s %8s %12s %12s\n", "runner", "old µs/turn", "new µs/turn", "new/old", "old × floor", "new × floor"
    for (n in names) {
      o = median(us["old", n]); w = median(us["new", n]); ro = median(r["old", n]); rn = median(r["new", n])
      printf "%-18s %12.1f %12.1f %8.3f %12s %12s\n", n, o, w, (o > 0 ? w / o : 0), (ro == "-" ? "-" : sprintf("%.2f", ro)), (rn == "-" ? "-" : sprintf("%.2f", rn))
    }
  }' "$tmp/runs"
