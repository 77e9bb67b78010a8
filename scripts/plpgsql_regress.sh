#!/bin/bash
# PostgreSQL's own PL/pgSQL regression suite as a peer test suite (issue 22).
#
#   scripts/plpgsql_regress.sh SRC [PORT] [OUT]
#
# SRC is an unpacked PostgreSQL 15.x source tree; the script downloads
# nothing. On Debian 12 one way to get it (into /tmp, never into this
# repository):
#   echo 'deb-src http://deb.debian.org/debian bookworm main' \
#     > /etc/apt/sources.list.d/src.list && apt-get update
#   cd /tmp && apt-get source --download-only postgresql-15
#   tar xjf postgresql-15_15.*.orig.tar.bz2      # SRC = /tmp/postgresql-15.N
# PORT (default 5599) is a free port for a throwaway server (initdb'd in a
# temporary directory, stopped at the end; run as root, the server runs as
# `postgres`). OUT (default a temporary directory) keeps every dump,
# workload and isolint output. PGBIN overrides /usr/lib/postgresql/15/bin;
# ISOLINT overrides target/release/isolint (else target/debug/isolint).
#
# For each of SRC/src/pl/plpgsql/src/sql/*.sql and
# SRC/src/test/regress/sql/plpgsql.sql: a fresh database runs the file with
# psql (its expected errors included), `pg_dump --schema-only` dumps what
# PostgreSQL kept, and every PL/pgSQL routine that is no trigger function
# (pg_proc: language plpgsql, return type neither trigger nor
# event_trigger) becomes one workload: the file's dump is the schema and
# the only input, `programs: [name]` picks the routine (all overloads of
# the name) as the program.
# `isolint check` runs on it, and the outcome is tallied:
#   read        exit 0 or 1 (a verdict)
#   listed      exit 2, rejected for a construct docs/sql-frontend.md lists
#               as not modelled (the message patterns are below)
#   syntax      exit 2, a syntax error (isolint's or PostgreSQL's parser)
#   other       exit 2, any other rejection
#   timeout     no answer in 600 s
#   crash       any other exit status (a panic is 101)
# The last lines print the counts; OUT/results.tsv has one line per routine.
set -u
SRC=${1:?usage: scripts/plpgsql_regress.sh SRC [PORT] [OUT]}
PORT=${2:-5599}
OUT=${3:-$(mktemp -d /tmp/plpgsql_regress.XXXXXX)}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${ISOLINT:-}" ]; then
    ISOLINT=$ROOT/target/release/isolint
    [ -x "$ISOLINT" ] || ISOLINT=$ROOT/target/debug/isolint
fi
FILES=$(ls "$SRC"/src/pl/plpgsql/src/sql/*.sql "$SRC"/src/test/regress/sql/plpgsql.sql)
mkdir -p "$OUT"
chmod 777 "$OUT"

# The throwaway server.
DB=$(mktemp -d /tmp/plpgsql_regress_db.XXXXXX)
chown postgres "$DB" 2>/dev/null
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
as_pg "$PGBIN/initdb" -A trust -D "$DB/db" >/dev/null || exit 2
as_pg "$PGBIN/pg_ctl" -D "$DB/db" -l "$DB/log" \
    -o "-p $PORT -k $DB -c listen_addresses=''" -w start >/dev/null || exit 2
trap 'as_pg "$PGBIN/pg_ctl" -D "$DB/db" -m immediate stop >/dev/null; rm -rf "$DB"' EXIT
PSQL="$PGBIN/psql -h $DB -p $PORT -U postgres -X -q"

# Rejections of constructs docs/sql-frontend.md lists as not modelled, by
# the words of isolint's first error (one extended regex; the doc's place
# in the comment after each).
LISTED_PARTS=(
    'dynamic SQL'                                # PL/pgSQL table: EXECUTE of anything else, FOR … IN EXECUTE
    'EXECUTE of a `(DO|CALL)` statement'         # PL/pgSQL table: EXECUTE 'DO …' / 'CALL …'
    'a DO block inside a routine'                # PL/pgSQL table: DO in a routine
    'is declared twice'                          # PL/pgSQL "Names": one variable per name
    'recursive call'                             # PL/pgSQL "Calls": recursion is an error
    'the column list of alias'                   # PL/pgSQL "Names": alias column lists
    'which has trigger'                          # Schema DDL: CREATE TRIGGER
    '(COMMIT|ROLLBACK) inside a block, IF, CASE or LOOP' # PL/pgSQL "Transactions"
    'which commits'                              # PL/pgSQL "Transactions": calling a procedure that commits
    'unknown table'                              # Input: a table the schema does not define
    'is written in [a-z]+; isolint inlines LANGUAGE sql functions only' # Schema objects: PL/pgSQL called from SQL
    'compiler option'                            # PL/pgSQL table: #variable_conflict
    'call of overloaded function'                # Functions: overloaded schema/library SQL functions
)
LISTED=$(IFS='|'; echo "${LISTED_PARTS[*]}")

: > "$OUT/results.tsv"
for f in $FILES; do
    base=$(basename "$f" .sql)
    dbname="r_$base"
    $PSQL -d postgres -c "DROP DATABASE IF EXISTS $dbname" >/dev/null 2>&1
    $PSQL -d postgres -c "CREATE DATABASE $dbname" >/dev/null || continue
    # The regression files include their expected errors: run on.
    (cd "$(dirname "$f")" && $PSQL -d "$dbname" -f "$f" >"$OUT/$base.psql.log" 2>&1)
    dump="$OUT/$base.dump.sql"
    "$PGBIN/pg_dump" -h "$DB" -p "$PORT" -U postgres --schema-only "$dbname" >"$dump"
    $PSQL -d "$dbname" -At -F '|' -c "
        SELECT p.oid, n.nspname, p.proname
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        JOIN pg_language l ON l.oid = p.prolang
        WHERE l.lanname = 'plpgsql'
          AND n.nspname NOT IN ('pg_catalog', 'information_schema')
          AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)
        ORDER BY n.nspname, p.proname, p.oid" >"$OUT/$base.routines"
    while IFS='|' read -r oid nsp name; do
        w="$OUT/$base/$name.$oid"
        mkdir -p "$w"
        # The dump is the whole input: its routine is the program (the
        # routines it calls are inlined from the same dump).
        printf 'schema: ../../%s.dump.sql\nprograms: [%s]\n' "$base" "$name" >"$w/isolint.yaml"
        (cd "$w" && timeout 600 "$ISOLINT" check . >out.txt 2>err.txt)
        rc=$?
        # The first error's message (after a "N errors" header, if any).
        first=$(grep -v -E '^ *× [0-9]+ errors$' "$w/err.txt" | grep -m1 -A1 '×' |
            tr -s ' \n│' ' ' | cut -c1-220)
        case $rc in
        0 | 1) kind=read ;;
        2)
            if echo "$first" | grep -qiE 'syntax error|Expected:|unexpected'; then
                kind=syntax
            elif echo "$first" | grep -qE "$LISTED"; then
                kind=listed
            else
                kind=other
            fi
            ;;
        124) kind=timeout ;;
        *) kind=crash ;;
        esac
        printf '%s\t%s.%s\t%s\t%s\n' "$kind" "$base" "$name" "$oid" "$first" >>"$OUT/results.tsv"
    done <"$OUT/$base.routines"
done

echo "results: $OUT/results.tsv"
for k in read listed syntax other timeout crash; do
    printf '%-7s %d\n' "$k" "$(grep -c "^$k	" "$OUT/results.tsv")"
done
printf '%-7s %d\n' total "$(wc -l <"$OUT/results.tsv")"
