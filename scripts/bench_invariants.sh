#!/bin/sh
# Benchmark of `isolint invariants` (issue 25): time to the SmallBank
# variant's counterexample at READ COMMITTED and REPEATABLE READ, and the
# rate of a complete search (executions per second) at SERIALIZABLE.
# Usage: scripts/bench_invariants.sh [path/to/isolint]   (needs PostgreSQL binaries)
set -eu
BIN=${1:-target/debug/isolint}
W=workloads/smallbank-invariant
for L in read-committed repeatable-read serializable; do
  start=$(date +%s.%N)
  "$BIN" invariants "$W" --postgres-temp --level "$L" --instances 2 --time-budget 600 --format json > /tmp/bench-inv-$L.json || true
  end=$(date +%s.%N)
  python3 - "$L" "$start" "$end" /tmp/bench-inv-$L.json <<'PY'
import json, sys
level, start, end, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
v = json.load(open(path))
b = v["bounds"]
runs = b["serial_runs"] + b["explorer_runs"] + b["interleavings"]
print(f"{level}: verdict {v['invariants'][0]['verdict']}; wall {end - start:.1f} s "
      f"(search {b['seconds']:.1f} s); serial {b['serial_runs']}, explorer {b['explorer_runs']}, "
      f"interleavings {b['interleavings']} (pruned {b['pruned']}); "
      f"{runs / max(b['seconds'], 1e-9):.1f} executions/s; complete {b['complete']}")
PY
done
