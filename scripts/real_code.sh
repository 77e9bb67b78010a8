#!/usr/bin/env bash
# Issue 22: run isolint on public code as written and print one "Tried on real code" row each.
#
#   scripts/real_code.sh [hammerdb=PATH] [graphile=PATH] [pgbench] [benchbase=PATH]
#
# PATH is a checkout or a bare git mirror (read at HEAD) of TPC-Council/HammerDB,
# graphile/worker or cmu-db/benchbase. Nothing of that code is kept in this repository:
# the extractions go to a temp dir (printed; kept for inspection). Environment:
#   ISOLINT  the binary (default target/debug/isolint)
#   PGBIN    PostgreSQL 15 binaries (default /usr/lib/postgresql/15/bin)
#   PGPORT   the throwaway server's port (default 5521)
# graphile-worker, pgbench and BenchBase need the throwaway server (initdb; as root it runs as
# postgres). BenchBase: see real_code_extract.py benchbase() for what the programs assume.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ISOLINT=${ISOLINT:-$HERE/../target/debug/isolint}
ISOLINT=$(realpath "$ISOLINT")
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PGPORT=${PGPORT:-5521}
OUT=$(mktemp -d /tmp/real_code.XXXXXX)
chmod 755 "$OUT"
echo "extractions in $OUT" >&2

# show REPO FILE: FILE of a checkout, or of a bare mirror's HEAD
show() {
  if [ -d "$1/.git" ] || [ -f "$1/$2" ]; then cat "$1/$2"; else git --git-dir="$1" show "HEAD:$2"; fi
}
list() { # list REPO DIR: the file names under DIR
  if [ -d "$1/$2" ]; then (cd "$1/$2" && ls); else git --git-dir="$1" ls-tree --name-only "HEAD:$2"; fi
}

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
PGD=""
pg_start() {
  [ -n "$PGD" ] && return
  PGD=$(mktemp -d /tmp/real_code_pg.XXXXXX)
  chmod 755 "$PGD"
  [ "$(id -u)" = 0 ] && chown postgres "$PGD"
  as_pg "$PGBIN/initdb" -A trust -D "$PGD/db" >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$PGD/db" -o "-p $PGPORT -k $PGD -c listen_addresses=''" -w start >/dev/null
  trap pg_stop EXIT
}
pg_stop() { [ -n "$PGD" ] && as_pg "$PGBIN/pg_ctl" -D "$PGD/db" -m fast stop >/dev/null && rm -rf "$PGD"; PGD=""; }
psql_() { "$PGBIN/psql" -h "$PGD" -p "$PGPORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
fresh_db() { psql_ -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null; }

# row NAME DIR COUNT: check DIR, allocate, print the table row
row() {
  local name=$1 dir=$2 count=$3 t0 t1 rc verdict loaded alloc
  t0=$(date +%s.%N)
  set +e
  "$ISOLINT" check "$dir" --no-confirm >"$dir.check.txt" 2>&1
  rc=$?
  set -e
  t1=$(date +%s.%N)
  case $rc in
    0) verdict="ROBUST"; loaded=yes ;;
    1) verdict="NOT ROBUST"; loaded=yes ;;
    *) verdict="error ($(grep -c '×' "$dir.check.txt") errors, see $dir.check.txt)"; loaded=no ;;
  esac
  alloc="-"
  if [ "$loaded" = yes ]; then
    alloc=$("$ISOLINT" allocate "$dir" --format json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["isolation"]["as_is"]
short = {"READ COMMITTED": "RC", "REPEATABLE READ": "RR", "SERIALIZABLE": "SER"}
print(", ".join("%s %s" % (p, short.get(l, l)) for p, l in d.items()))' || echo "allocate failed")
  fi
  printf '| %s | %s | %s | %s | %s | %.2f s |\n' "$name" "$count" "$loaded" "$verdict" "$alloc" \
    "$(echo "$t1 - $t0" | bc)"
}

hammerdb() {
  local src=$1 d=$OUT/hammerdb
  show "$src" src/postgresql/pgoltp.tcl >"$OUT/pgoltp.tcl"
  python3 "$HERE/real_code_extract.py" hammerdb "$OUT/pgoltp.tcl" "$d" 2>/dev/null
  for v in funcs procs; do
    printf 'schema: ../schema.sql\nprograms: [neword, payment, delivery, ostat, slev]\n' >"$d/$v/isolint.yaml"
  done
  row "HammerDB TPC-C functions" "$d/funcs" "5 routines (+ DBMS_RANDOM)"
  row "HammerDB TPC-C procedures" "$d/procs" "5 routines (+ DBMS_RANDOM)"
}

graphile() {
  local src=$1 d=$OUT/graphile f n=0
  pg_start
  mkdir -p "$d/sql" "$d/routines"
  fresh_db gw
  psql_ -d gw -c "CREATE SCHEMA graphile_worker" \
    -c "CREATE TABLE graphile_worker.migrations (id int primary key, ts timestamptz default now() not null, breaking boolean not null default false)" >/dev/null
  for f in $(list "$src" sql | grep -E '^[0-9]+\.sql$' | sort); do
    # graphile-worker runs each migration in a transaction, replacing :GRAPHILE_WORKER_SCHEMA
    # by the schema's name in the text (src/migrate.ts)
    show "$src" "sql/$f" | sed 's/:GRAPHILE_WORKER_SCHEMA\b/graphile_worker/g' | psql_ -d gw -1 >/dev/null
    n=$((n + 1))
  done
  "$PGBIN/pg_dump" -h "$PGD" -p "$PGPORT" -U postgres --schema-only gw >"$d/dump.sql"
  echo "graphile-worker: $n migrations applied" >&2
  # The dump's PL/pgSQL routines are programs (`programs:` names them); a LANGUAGE sql
  # function is inlined where it is called, so each gets a program calling it with $1, $2, …
  python3 - "$d" <<'PY'
import re, sys
d = sys.argv[1]
dump = open(d + "/dump.sql").read()
progs = []
for m in re.finditer(r"^CREATE FUNCTION graphile_worker\.(\w+)\((.*?)\) RETURNS (.*?)\n\s+LANGUAGE (\w+)", dump, re.M):
    name, args, ret, lang = m.groups()
    if ret == "trigger":
        continue
    if lang == "plpgsql":
        progs.append(name)
        continue
    n = len([a for a in re.split(r",\s*(?![^()]*\))", args) if a.strip()])
    params = ", ".join("$%d" % (i + 1) for i in range(n))
    call = ("SELECT * FROM graphile_worker.%s(%s);" if ret.startswith("SETOF") else "SELECT graphile_worker.%s(%s);") % (name, params)
    open("%s/call_%s.sql" % (d, name), "w").write(call + "\n")
    progs.append("call_" + name)
open(d + "/isolint.yaml", "w").write("schema: dump.sql\nprograms: [%s]\n" % ", ".join(progs))
PY
  local ts=()
  for f in $(list "$src" src/sql | grep '\.ts$'); do show "$src" "src/sql/$f" >"$OUT/$f"; ts+=("$OUT/$f"); done
  python3 "$HERE/real_code_extract.py" graphile "${ts[@]}" "$d/sql"
  printf 'schema: ../dump.sql\n' >"$d/sql/isolint.yaml"
  row "graphile-worker dump routines" "$d" \
    "$(grep -o '\[.*\]' "$d/isolint.yaml" | tr ',' '\n' | grep -vc call_) PL/pgSQL + $(ls "$d" | grep -c '^call_') SQL functions"
  row "graphile-worker src/sql/*.ts" "$d/sql" "$(ls "$d/sql" | grep -c '\.sql$') programs"
}

pgbench_() {
  local d=$OUT/pgbench b
  pg_start
  mkdir -p "$d"
  fresh_db pgb
  "$PGBIN/pgbench" -h "$PGD" -p "$PGPORT" -U postgres -i -s 1 -q pgb >/dev/null 2>&1
  "$PGBIN/pg_dump" -h "$PGD" -p "$PGPORT" -U postgres --schema-only pgb >"$d/schema.sql"
  for b in tpcb-like simple-update select-only; do
    # pgbench prints its built-in script on stderr with --show-script
    "$PGBIN/pgbench" --show-script="$b" 2>"$d/$b.pgbench"
  done
  printf 'schema: schema.sql\n' >"$d/isolint.yaml"
  row "pgbench built-in scripts" "$d" "3 scripts"
}

BENCHBASE_NAMES="smallbank tpcc seats auctionmark tatp voter twitter epinions resourcestresser wikipedia"
benchbase() {
  local src=$1 d=$OUT/benchbase root=$OUT/benchbase_src b paths=() n
  mkdir -p "$root"
  for b in $BENCHBASE_NAMES; do
    paths+=("src/main/java/com/oltpbenchmark/benchmarks/$b" "src/main/resources/benchmarks/$b")
  done
  if [ -d "$src/src/main/java" ]; then
    for b in "${paths[@]}"; do mkdir -p "$root/$(dirname "$b")"; cp -r "$src/$b" "$root/$b"; done
  else
    git --git-dir="$src" archive HEAD "${paths[@]}" | tar -x -C "$root"
  fi
  # shellcheck disable=SC2086
  python3 "$HERE/real_code_extract.py" benchbase "$root" "$d" $BENCHBASE_NAMES
  # every statement PREPAREd on PostgreSQL 15 with the benchmark's DDL; one it rejects becomes
  # RAISE EXCEPTION in the program (what running it does: the transaction aborts)
  pg_start
  python3 "$HERE/real_code_extract.py" benchbase-check "$d" "$PGBIN/psql" -h "$PGD" -p "$PGPORT" -U postgres -X -q
  for b in $BENCHBASE_NAMES; do
    [ -f "$d/$b/extract.txt" ] || continue
    read -r n _ <"$d/$b/extract.txt"
    row "BenchBase $b" "$d/$b" "$n procedures, $(grep -c ':c[0-9]* THEN' "$d/$b"/*.sql | awk -F: '{s += $2} END {print s}') statements$( [ -s "$d/$b/rejected.txt" ] && echo "; PostgreSQL 15 rejects $(wc -l <"$d/$b/rejected.txt")")"
  done
}

for arg in "$@"; do
  case $arg in
    hammerdb=*) hammerdb "${arg#*=}" ;;
    graphile=*) graphile "${arg#*=}" ;;
    pgbench) pgbench_ ;;
    benchbase=*) benchbase "${arg#*=}" ;;
    *) echo "unknown argument $arg" >&2; exit 2 ;;
  esac
done
