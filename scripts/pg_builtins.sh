#!/bin/sh
# Regenerates src/frontend/pg_builtins.tsv, isolint's catalogue of
# PostgreSQL's built-in functions, from pg_proc of a throwaway PostgreSQL 15
# server (issue 22: the list comes from PostgreSQL, not from memory).
#
#   scripts/pg_builtins.sh [PORT]      (default port 5599; PGBIN overrides
#                                       /usr/lib/postgresql/15/bin)
#
# One line per function name (overloads merged), tab-separated:
#   name  volatility  kinds  access
# volatility: the most volatile overload (immutable < stable < volatile);
# kinds: pg_proc.prokind letters of the overloads (f function, a aggregate,
# w window, p procedure); access: what a call touches besides its arguments.
# Most functions touch nothing (`-`). The others, named by hand below
# because pg_proc does not say it:
#   sequence          nextval/setval/currval/lastval: sequences are outside
#                     transactions (a fresh value, never a conflict)
#   lock              advisory locks: they only ever order more
#   notify            pg_notify: a notification sent at commit, no data
#   config            set_config: a setting of the session or transaction
#   xid               txid_current & co.: assigns the transaction an id
#   sql-text          runs a query given as text (query_to_xml, ts_stat,
#                     ts_rewrite's query form): reads tables isolint cannot
#                     see -> rejected
#   tables            reads whole tables, schemas or an open cursor named by
#                     an argument (table_to_xml, cursor_to_xml, …) -> rejected
#   large-object      reads or writes pg_largeobject (lo_*, loread,
#                     lowrite): user data isolint does not model -> rejected
#   logical-decoding  returns the changes other transactions committed, or
#                     advances a slot -> rejected
#   remote            dblink (contrib): runs SQL in another session, i.e.
#                     another transaction -> rejected
set -eu
PORT=${1:-5599}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/src/frontend/pg_builtins.tsv"
D=$(mktemp -d)
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[ "$(id -u)" = 0 ] && chown postgres "$D"
trap 'as_pg "$PGBIN/pg_ctl" -D "$D/db" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$D"' EXIT
as_pg "$PGBIN/initdb" -A trust -D "$D/db" >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$D/db" -l "$D/log" -w \
    -o "-p $PORT -k $D -c listen_addresses=''" start >/dev/null
"$PGBIN/psql" -h "$D" -p "$PORT" -U postgres -q -c 'CREATE EXTENSION dblink' postgres
"$PGBIN/psql" -h "$D" -p "$PORT" -U postgres -AtX -F '	' postgres >"$OUT.tmp" <<'SQL'
SELECT p.proname,
       CASE max(CASE p.provolatile WHEN 'v' THEN 3 WHEN 's' THEN 2 ELSE 1 END)
           WHEN 3 THEN 'volatile' WHEN 2 THEN 'stable' ELSE 'immutable' END,
       string_agg(DISTINCT p.prokind::text, ''),
       CASE
         WHEN n.nspname <> 'pg_catalog' THEN 'remote'
         WHEN p.proname IN ('query_to_xml', 'query_to_xmlschema',
                            'query_to_xml_and_xmlschema', 'ts_stat', 'ts_rewrite')
           THEN 'sql-text'
         WHEN p.proname ~ '^(table|schema|database|cursor)_to_xml'
           THEN 'tables'
         WHEN p.proname ~ '^lo_' OR p.proname IN ('loread', 'lowrite')
           THEN 'large-object'
         WHEN p.proname ~ '^pg_logical_slot_' OR p.proname = 'pg_replication_slot_advance'
           THEN 'logical-decoding'
         WHEN p.proname IN ('nextval', 'setval', 'currval', 'lastval',
                            'pg_sequence_last_value')
           THEN 'sequence'
         WHEN p.proname ~ '^pg_(try_)?advisory_' THEN 'lock'
         WHEN p.proname = 'pg_notify' THEN 'notify'
         WHEN p.proname = 'set_config' THEN 'config'
         WHEN p.proname IN ('txid_current', 'txid_current_if_assigned',
                            'pg_current_xact_id', 'pg_current_xact_id_if_assigned')
           THEN 'xid'
         ELSE '-'
       END
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'pg_catalog' OR p.proname LIKE 'dblink%'
GROUP BY p.proname, n.nspname
ORDER BY p.proname COLLATE "C";
SQL
mv "$OUT.tmp" "$OUT"
echo "wrote $OUT ($(wc -l <"$OUT") functions)"
