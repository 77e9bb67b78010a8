#!/usr/bin/env python3
"""Extract the SQL of public code bases as written (issue 22), for scripts/real_code.sh.

hammerdb PGOLTP_TCL OUT: HammerDB's PostgreSQL TPC-C (src/postgresql/pgoltp.tcl):
  OUT/schema.sql   the CREATE TABLE (PostgreSQL variant, no partitions) and CREATE INDEX strings
  OUT/funcs/tpcc.sql, OUT/procs/tpcc.sql   the routines of the non-Oracle branch
  (DBMS_RANDOM, NEWORD, DELIVERY, PAYMENT, OSTAT, SLEV), functions and procedures.
  Tcl: the DDL are "…" strings (no $, [ or \\ substitution occurs in them: checked), the routines
  {…} strings, which Tcl takes verbatim (brace matching only).
graphile TS_FILE... OUT: the `text:` SQL strings of graphile-worker's src/sql/*.ts, one .sql
  program each, `${escapedWorkerSchema}` = graphile_worker, `${now}` = now(), getJobs as its
  hard-coded strategy 2, no flags, batch size 1.
"""
import os
import re
import sys


def braced(text, start):
    """The {…} Tcl word opening at text[start] == '{' (verbatim, nesting counted)."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == "\\":
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i
    raise SystemExit("unbalanced braces at %d" % start)


def proc_body(text, name):
    m = re.search(r"^proc %s \{[^}]*\} " % name, text, re.M)
    if not m:
        raise SystemExit("proc %s not found" % name)
    return braced(text, m.end())[0]


def hammerdb(tcl_path, out):
    text = open(tcl_path).read()
    tables = proc_body(text, "CreateTables")
    ddl = []
    seen = set()
    for m in re.finditer(r'set sql\((\d+)\) "(CREATE TABLE (\w+) [^"]*)"', tables):
        stmt, name = m.group(2), m.group(3)
        # The PostgreSQL branch (INTEGER …, PRIMARY KEY); the first ORDER_LINE has no partitions.
        if re.search(r"\bNUMBER\b", stmt) or name in seen or "PARTITION BY" in stmt:
            continue
        assert not re.search(r"[$\[\\]", stmt), stmt
        seen.add(name)
        ddl.append(stmt + ";")
    for m in re.finditer(r'set sql\(\d+\) "(CREATE UNIQUE INDEX [^"]*)"', proc_body(text, "CreateIndexes")):
        ddl.append(m.group(1) + ";")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "schema.sql"), "w") as f:
        f.write("\n".join(ddl) + "\n")
    procs = proc_body(text, "CreateStoredProcs")
    # The non-Oracle branch: `} else {` after `if { $ora_compatible eq "true" } {…}`.
    m = re.search(r'if \{ \$ora_compatible eq "true" \} ', procs)
    _, end = braced(procs, m.end())
    rest = procs[end + 1 :]
    m = re.match(r"\s*else ", rest)
    branch, _ = braced(rest, m.end())
    m = re.search(r'if \{ \$pg_storedprocs eq "true" \} ', branch)
    procs_part, end = braced(branch, m.end())
    m = re.match(r"\s*else ", branch[end + 1 :])
    funcs_part, _ = braced(branch[end + 1 :], m.end())
    for kind, part in (("procs", procs_part), ("funcs", funcs_part)):
        stmts = []
        for m in re.finditer(r"set sql\((\d+)\) \{", part):
            body, _ = braced(part, m.end() - 1)
            if "create_distributed" in body:
                continue
            body = body.strip()
            if not body.endswith(";"):
                body += ";"
            stmts.append(body)
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        with open(os.path.join(out, kind, "tpcc.sql"), "w") as f:
            f.write("\n".join(stmts) + "\n")
        print(kind, len(stmts), "statements", file=sys.stderr)


def js_template(s):
    """A JS template literal's text: `\\` + newline is a line continuation; the rest is kept."""
    s = s.replace("\\\n", "")
    s = s.replace("${escapedWorkerSchema}", "graphile_worker").replace("${now}", "now()")
    s = s.replace("$${", "${")
    if "${" in s:
        return None
    return s


def graphile(files, out):
    os.makedirs(out, exist_ok=True)
    for path in files:
        stem = os.path.splitext(os.path.basename(path))[0]
        src = open(path).read()
        if stem == "getJobs":
            # strategy 2 (hard-coded in the file), no flags, now(), batch size 1
            q2 = re.search(r"strategy === 2\s*\?\s*`(.*?)`", src, re.S).group(1)
            upd = re.search(r"const updateQueue =.*?:\s*`(.*?)`;", src, re.S).group(1)
            text = re.search(r"const text = `(.*?)`;", src, re.S).group(1)
            text = text.replace("${queueClause}", q2).replace("${flagsClause}", "")
            text = text.replace("${updateQueue}", upd).replace("${batchSize}", "1")
            texts = [text]
        else:
            texts = re.findall(r"text: `(.*?)`,", src, re.S)
            texts += re.findall(r"const text = `(.*?)`;", src, re.S)
        kept = []
        for t in texts:
            sql = js_template(t)
            if sql is None:
                # completeJobs' `manualPrepare` path (const false): built by string concatenation
                print("%s: skipped a text built at run time: %s" % (stem, t[:60]), file=sys.stderr)
            else:
                kept.append(sql)
        for i, sql in enumerate(kept):
            name = stem if len(kept) == 1 else "%s_%d" % (stem, i + 1)
            with open(os.path.join(out, name + ".sql"), "w") as f:
                f.write(sql.strip().rstrip(";") + ";\n")


if __name__ == "__main__":
    if sys.argv[1] == "hammerdb":
        hammerdb(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "graphile":
        graphile(sys.argv[2:-1], sys.argv[-1])
    else:
        raise SystemExit("usage: real_code_extract.py hammerdb TCL OUT | graphile TS... OUT")
