#!/usr/bin/env bash
# Issue 23's acceptance table: per workload, `isolint check --postgres-temp --format json`
# and one Markdown row: static alarms (dangerous components, one witness each), confirmed by
# the explorer (how many with values, not in the model only), reproduced on PostgreSQL, and the replay's own reason for each cycle it did
# not reproduce. The README's table adds, per reason, whether it is a limit of the replay or
# a schedule PostgreSQL cannot produce (that takes a person reading the schedule).
#
#   scripts/acceptance.sh [NAME=DIR[:EXTRA ARGS]] ...
#
# Without arguments: the bundled TPC-C, SmallBank, Courseware, FusionTicket, Auction (with
# and without foreign keys) and website-hits. For the real code, extract it first with
# scripts/real_code.sh (it prints its temp dir T) and pass e.g.
#   hammerdb-functions=T/hammerdb/funcs hammerdb-procedures=T/hammerdb/procs
#   graphile-dump=T/graphile graphile-ts=T/graphile/sql
# Environment: ISOLINT (default target/debug/isolint), built with the `postgres` feature.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ISOLINT=${ISOLINT:-$HERE/../target/debug/isolint}
W=$HERE/../workloads
if [ $# -eq 0 ]; then
  set -- "TPC-C=$W/tpcc" "SmallBank=$W/smallbank" "Courseware=$W/courseware" \
    "FusionTicket=$W/fusionticket" "Auction=$W/auction" "Auction (--no-fk)=$W/auction:--no-fk" \
    "website-hits=$W/website-hits"
fi
echo "| workload | static alarms | confirmed | reproduced on PostgreSQL | not reproduced: the replay's reason |"
echo "|---|---|---|---|---|"
for arg in "$@"; do
  name=${arg%%=*}
  rest=${arg#*=}
  dir=${rest%%:*}
  extra=""
  [ "$rest" != "$dir" ] && extra=${rest#*:}
  set +e
  # shellcheck disable=SC2086
  out=$("$ISOLINT" check "$dir" --postgres-temp --format json $extra 2>/dev/null)
  rc=$?
  set -e
  if [ $rc -gt 1 ]; then
    echo "| $name | error (exit $rc) | | | |"
    continue
  fi
  NAME=$name python3 -c '
import json, os, sys
j = json.loads(sys.stdin.read())
ws = j["witnesses"]
conf = sum(1 for w in ws if w.get("confirmation", {}).get("status") == "confirmed")
vals = sum(1 for w in ws if w.get("confirmation", {}).get("with_values"))
rep = sum(1 for w in ws if w.get("postgres", {}).get("status") == "reproduced")
why = []
for i, w in enumerate(ws):
    p = w.get("postgres", {})
    if p.get("status") != "reproduced":
        progs = sorted({e["from_program"] for e in w["edges"]})
        why.append("%d (%s): %s" % (i + 1, ", ".join(progs), (p.get("why") or "")[:160]))
print("| %s | %d | %d (%d with values) | %d | %s |" % (os.environ["NAME"], len(ws), conf, vals, rep, "; ".join(why) or "-"))
' <<<"$out"
done
