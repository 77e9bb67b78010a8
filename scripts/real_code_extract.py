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
benchbase ROOT OUT NAME...: BenchBase's procedures (see benchbase()).
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


# --- BenchBase -------------------------------------------------------------------------------

JAVA_TOKEN = re.compile(
    r'(?P<tb>"""[ \t]*\n(?:\\.|[^\\])*?""")|(?P<str>"(?:\\.|[^"\\\n])*")|(?P<chr>\'(?:\\.|[^\'\\])\')'
    r"|(?P<num>\d+[lL]?)|(?P<name>[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*)"
    r"|(?P<ws>\s+|//[^\n]*|/\*.*?\*/)|(?P<op>.)",
    re.S,
)
JAVA_ESC = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "s": " ", "'": "'", '"': '"', "\\": "\\"}


def java_unescape(s):
    return re.sub(r"\\(.)", lambda m: JAVA_ESC.get(m.group(1), m.group(0)), s, flags=re.S)


def text_block(raw):
    """A Java text block's value (JLS 3.10.6): incidental indentation and trailing blanks removed."""
    body = raw[3:-3]
    body = body[body.index("\n") + 1 :]
    lines = body.split("\n")
    # the closing delimiter's line counts for the indentation when it holds only blanks
    significant = [l for l in lines[:-1] if l.strip()] + [lines[-1]]
    indent = min(len(l) - len(l.lstrip(" \t")) for l in significant)
    out = "\n".join(l[indent:].rstrip(" \t") for l in lines)
    out = out.replace("\\\n", "")
    return java_unescape(out)


def java_tokens(src):
    toks = []
    for m in JAVA_TOKEN.finditer(src):
        kind = m.lastgroup
        if kind == "ws":
            continue
        text = m.group(kind)
        if kind == "name":
            text = re.sub(r"\s+", "", text)
        toks.append((kind, text, m.start()))
    return toks


class JavaExpr:
    """Evaluates the constant string expressions BenchBase builds its SQL with: literals, text
    blocks, `+`, named constants, `String.format`, `.formatted`, parentheses. Anything else is
    None (the statement is then reported as not extracted, never guessed)."""

    def __init__(self, consts):
        self.consts = consts

    def parse(self, toks, i):
        v, i = self.term(toks, i)
        while i < len(toks) and toks[i][1] == "+":
            w, i = self.term(toks, i + 1)
            v = None if v is None or w is None else str(v) + str(w)
        return v, i

    def args(self, toks, i):
        """`( e, e, … )` from toks[i] == '('."""
        vals = []
        i += 1
        if toks[i][1] == ")":
            return vals, i + 1
        while True:
            v, i = self.parse(toks, i)
            vals.append(v)
            if toks[i][1] == ",":
                i += 1
                continue
            if toks[i][1] != ")":
                raise ValueError("expected ) at %d" % toks[i][2])
            return vals, i + 1

    def term(self, toks, i):
        kind, text, _ = toks[i]
        if kind == "str":
            v, i = java_unescape(text[1:-1]), i + 1
        elif kind == "tb":
            v, i = text_block(text), i + 1
        elif kind == "num":
            v, i = int(text.rstrip("lL")), i + 1
        elif text == "(":
            v, i = self.parse(toks, i + 1)
            if toks[i][1] != ")":
                raise ValueError("expected )")
            i += 1
        elif kind == "name" and text == "String.format" and toks[i + 1][1] == "(":
            vals, i = self.args(toks, i + 1)
            v = java_format(vals[0], vals[1:])
        elif kind == "name":
            if i + 1 < len(toks) and toks[i + 1][1] == "(":
                _, i = self.args(toks, i + 1)  # a method call: not a constant
                v = None
            else:
                v, i = self.const(text), i + 1
        else:
            raise ValueError("unexpected %r at %d" % (text, toks[i][2]))
        # postfix `.formatted(…)` (toks merge `.formatted` into a name token after a literal)
        while i < len(toks) and toks[i][0] == "op" and toks[i][1] == "." and toks[i + 1][1] == "formatted":
            vals, i = self.args(toks, i + 2)
            v = java_format(v, vals)
        return v, i

    def const(self, name):
        vals = self.consts.get(name.split(".")[-1], set())
        return next(iter(vals)) if len(vals) == 1 else None


def java_format(fmt, vals):
    if fmt is None or any(v is None for v in vals):
        return None
    if re.search(r"%(?!s|d|%)", fmt):
        return None
    return fmt.replace("%d", "%s") % tuple(vals)


def java_constants(files):
    """`static final` String/int/long constants of every class of the benchmark, by simple name
    (a name with two different values is ambiguous: None when used)."""
    consts = {}
    raw = []
    srcs = [open(path).read() for path in files]
    everything = "\n".join(srcs)
    for src in srcs:
        for m in re.finditer(r"\bstatic\s+(final\s+)?(?:String|int|long)\s+(\w+)\s*=", src):
            # a static field that is not final counts when nothing else assigns it
            if m.group(1) or len(re.findall(r"\b%s\s*=[^=]" % m.group(2), everything)) == 1:
                raw.append((m.group(2), src, m.end()))
    for _ in range(3):  # constants built from constants
        ev = JavaExpr(consts)
        for name, src, at in raw:
            toks = java_tokens(src[at : src.index(";", at) + 1] if '"""' not in src[at : at + 400] else src[at:])
            try:
                v, i = ev.parse(toks, 0)
            except (ValueError, IndexError):
                continue
            if v is not None and toks[i][1] == ";":
                consts.setdefault(name, set()).add(v)
        # keep only the last round's values
    return consts


def dialect_overrides(xml_text):
    """BenchBase's dialect-postgres.xml: {(procedure, statement): sql}; BenchBase replaces the
    Java string of that SQLStmt field with it when it runs on PostgreSQL."""
    import xml.etree.ElementTree as ET

    out = {}
    root = ET.fromstring(xml_text)
    for d in root.iter("dialect"):
        if d.get("type") != "POSTGRES":
            continue
        for p in d.iter("procedure"):
            for s in p.iter("statement"):
                out[(p.get("name"), s.get("name"))] = s.text.strip()
    return out


def substitute(sql, counts):
    """SQLStmt.setSQL: each `??` in turn becomes `?, ?, …` (count from the constructor)."""
    for c in counts:
        sql = sql.replace("??", ", ".join(["?"] * c), 1)
    return sql


def benchbase_statements(path, consts):
    """[(field, sql or None, why)] of one procedure class: every `new SQLStmt(…)`."""
    src = open(path).read()
    toks = java_tokens(src)
    ev = JavaExpr(consts)
    out = []
    for i, (kind, text, at) in enumerate(toks):
        if not (kind == "name" and text == "new" and toks[i + 1][1] == "SQLStmt"):
            continue
        field = toks[i - 2][1] if toks[i - 1][1] == "=" and toks[i - 2][0] == "name" else None
        try:
            vals, _ = ev.args(toks, i + 2)
        except (ValueError, IndexError) as e:
            out.append((field, None, "unparsed: %s" % e))
            continue
        sql, counts = vals[0], vals[1:]
        if any(not isinstance(c, int) for c in counts):
            counts = None
        if field and field.startswith("this."):
            field = field[5:]
        if sql is None:
            sql = runtime_sql(path, field, consts)
        if sql is None or counts is None:
            out.append((field, None, counts, "built at run time, line %d" % (src.count("\n", 0, at) + 1)))
            continue
        out.append((field, sql.strip(), counts, None))
    return out


def runtime_sql(path, field, consts):
    """The SQL of the few SQLStmts BenchBase builds in a loop of an instance initializer from
    constants, computed as that loop does (checked against the Java by hand; None elsewhere)."""
    cls = os.path.basename(path)[:-5]
    src = open(path).read()
    one = lambda n: next(iter(consts.get(n, {None})))
    if cls in ("CPU1", "CPU2") and field == "cpuSelect":
        # String complexClause = "'passwd'" (CPU1) / "passwd" (CPU2);
        # for (i = 1; i <= CPUn_nestedLevel; ++i) complexClause = "md5(concat(" + complexClause + ",?))";
        m = re.search(r'String complexClause = "((?:[^"\\]|\\.)*)";\s*for \(int i = 1; i <= ResourceStresserWorker\.(\w+); \+\+i\) \{\s*'
                      r'complexClause = "md5\(concat\(" \+ complexClause \+ ",\?\)\)";\s*\}', src)
        if not m or one(m.group(2)) is None:
            return None
        clause = java_unescape(m.group(1))
        for _ in range(one(m.group(2))):
            clause = "md5(concat(" + clause + ",?))"
        return "SELECT count(*) FROM (SELECT %s FROM %s WHERE empid >= 0 AND empid < 100) T1" % (
            clause, one("TABLENAME_CPUTABLE"))
    if cls == "IO1" and field == "ioUpdate":
        # for (col = 1; col <= IO1_howManyColsPerRow; ++col) setClause += (col > 1 ? "," : "") + " data" + col + "=?";
        if not re.search(r'for \(int col = 1; col <= ResourceStresserWorker\.IO1_howManyColsPerRow; \+\+col\) \{\s*'
                         r'setClause = setClause \+ \(col > 1 \? "," : ""\) \+ " data" \+ col \+ "=\?";', src):
            return None
        n = one("IO1_howManyColsPerRow")
        if n is None:
            return None
        set_clause = "".join(("," if c > 1 else "") + " data%d=?" % c for c in range(1, n + 1))
        return "UPDATE %s SET %s WHERE empid >= ? AND empid < ?" % (one("TABLENAME_IOTABLE"), set_clause)
    return None


def key_columns(ddl):
    """{table: {columns of its PRIMARY KEY and UNIQUE constraints and indexes}} (lower case)."""
    keys = {}
    for m in re.finditer(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*?)\);", ddl, re.S | re.I):
        t, body = m.group(1).lower(), m.group(2)
        cols = keys.setdefault(t, set())
        for k in re.finditer(r"(?:PRIMARY\s+KEY|UNIQUE)\s*\(([^)]*)\)", body, re.I):
            cols.update(c.strip().strip('"').lower() for c in k.group(1).split(","))
        for line in body.split(","):
            w = line.split()
            if w and re.search(r"\b(PRIMARY\s+KEY|UNIQUE)\b", line, re.I) and not re.match(r"(PRIMARY|UNIQUE|CONSTRAINT)", w[0], re.I):
                cols.add(w[0].strip('"').lower())
    for m in re.finditer(r"CREATE\s+UNIQUE\s+INDEX\s+\w+\s+ON\s+(\w+)\s*\(([^)]*)\)", ddl, re.I):
        keys.setdefault(m.group(1).lower(), set()).update(c.strip().lower() for c in m.group(2).split(","))
    return keys


def changing_tables(sqls, keys, ddl):
    """Tables whose set of rows some statement changes: INSERT / DELETE targets and UPDATE
    targets that assign a key column. Only there can a read find its row missing and the row
    appear later (or the other way round)."""
    out = set()
    for sql in sqls:
        name = r'(?:"?\w+"?\.)?"?(\w+)"?'  # [schema.]table, either quoted
        for m in re.finditer(r"\b(?:INSERT\s+INTO|DELETE\s+FROM|MERGE\s+INTO|TRUNCATE(?:\s+TABLE)?)\s+" + name, sql, re.I):
            out.add(m.group(1).lower())
        m = re.search(r"\bUPDATE\s+" + name + r"(?:\s+(?:AS\s+)?\w+)?\s+SET\s+(.*?)(?:\bWHERE\b|$)", sql, re.I | re.S)
        if m:
            t = m.group(1).lower()
            assigned = {c.lower() for c in re.findall(r"(\w+)\s*=", m.group(2))}
            if assigned & keys.get(t, set()) or t not in keys:
                out.add(t)
    # a referential action (ON DELETE/UPDATE CASCADE, SET NULL/DEFAULT) changes the rows of the
    # referencing table when the referenced one changes
    actions = []
    for stmt in re.split(r";", ddl):
        m = re.search(r"\b(?:CREATE\s+TABLE(?:\s+IF\s+NOT\s+EXISTS)?|ALTER\s+TABLE(?:\s+ONLY)?)\s+(\w+)", stmt, re.I)
        if m:
            for r in re.finditer(r"REFERENCES\s+(\w+)[^,;]*?\bON\s+(?:DELETE|UPDATE)\s+(?:CASCADE|SET)", stmt, re.I | re.S):
                actions.append((m.group(1).lower(), r.group(1).lower()))
    grew = True
    while grew:
        grew = False
        for child, parent in actions:
            if parent in out and child not in out:
                out.add(child)
                grew = True
    return out



def benchbase(root, out, names):
    """BenchBase (cmu-db/benchbase checkout ROOT): one program per procedure class of each
    benchmark NAME, its SQLStmt strings as PostgreSQL receives them (the dialect-postgres.xml
    override where there is one, `??` expanded as SQLStmt does), the benchmark's
    ddl-postgres.sql as the schema. The Java run() method decides which statements run, in
    which order and how often; the extraction does not read it, so each program runs any
    sequence of its statements (a LOOP choosing one per iteration). Where a statement reads a
    table whose rows some statement of the benchmark inserts or deletes, the Java may go on
    when the row is missing: FOUND is mentioned after it, so isolint analyses that possibility."""
    java = os.path.join(root, "src/main/java/com/oltpbenchmark/benchmarks")
    res = os.path.join(root, "src/main/resources/benchmarks")
    for name in names:
        pdir = os.path.join(java, name, "procedures")
        if not os.path.isdir(pdir):
            print("%s: no procedures" % name, file=sys.stderr)
            continue
        files = []
        for dirpath, _, fs in os.walk(os.path.join(java, name)):
            files += [os.path.join(dirpath, f) for f in fs if f.endswith(".java")]
        consts = java_constants(files)
        dialect = {}
        dpath = os.path.join(res, name, "dialect-postgres.xml")
        if os.path.exists(dpath):
            dialect = dialect_overrides(open(dpath).read())
        ddl = open(os.path.join(res, name, "ddl-postgres.sql")).read()
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "schema.sql"), "w") as f:
            f.write(ddl)
        procs = {}
        missing = []
        for f in sorted(os.listdir(pdir)):
            src = open(os.path.join(pdir, f)).read()
            cls = f[:-5]
            if not f.endswith(".java") or re.search(r"\babstract\s+class\b", src):
                continue
            stmts = []
            for field, sql, counts, why in benchbase_statements(os.path.join(pdir, f), consts):
                if (cls, field) in dialect and counts is not None:
                    sql = dialect[(cls, field)]
                if sql is None:
                    missing.append("%s.%s: %s" % (cls, field, why))
                else:
                    sql = substitute(sql, counts)
                stmts.append((field, sql))
            procs[cls] = stmts
        import json

        with open(os.path.join(d, "statements.json"), "w") as f:
            json.dump({cls: stmts for cls, stmts in procs.items()}, f, indent=1)
        n = write_programs(d, name, procs, ddl, {})
        print("%s: %d of %d procedures, %d statements" % (name, n, len([p for p in procs.values() if p]), sum(len(s) for s in procs.values())), file=sys.stderr)
        for m in missing:
            print("%s: not extracted: %s" % (name, m), file=sys.stderr)
        with open(os.path.join(d, "extract.txt"), "w") as f:
            f.write("%d %d\n" % (n, len([p for p in procs.values() if p])))
            f.write("".join("not extracted: %s\n" % m for m in missing))


def write_programs(d, name, procs, ddl, rejected):
    """One program per procedure (see benchbase()); a statement PostgreSQL 15 rejects
    (`rejected`: {(class, field): message}) is, where reached, an error that aborts the
    transaction: RAISE EXCEPTION in its place."""
    keys = key_columns(ddl)
    changing = changing_tables([s for st in procs.values() for _, s in st if s], keys, ddl)
    n = 0
    if True:
        for cls, stmts in procs.items():
            if not stmts or any(s is None for _, s in stmts):
                continue  # not extracted: reported below, no program written
            lines = [
                "-- BenchBase %s %s: its %d SQLStmt strings, any order, repetition and subset"
                % (name, cls, len(stmts)),
                "-- (generated by scripts/real_code_extract.py; the Java run() decides the order)",
                "LOOP",
            ]
            for k, (field, sql) in enumerate(stmts, 1):
                lines.append("  %s :c%d THEN  -- %s" % ("IF" if k == 1 else "ELSIF", k, field))
                if (cls, field) in rejected:
                    msg = rejected[(cls, field)].replace("'", "''")
                    lines.append("    RAISE EXCEPTION 'PostgreSQL 15 rejects %s.%s: %s';" % (cls, field, msg))
                    continue
                lines.append("    " + sql.rstrip().rstrip(";").replace("\n", "\n    ") + ";")
                words = {w.lower() for w in re.findall(r"\w+", sql)}
                if not sql.lstrip().upper().startswith("INSERT") and words & changing:
                    lines.append("    :found%d := FOUND;" % k)
            lines += ["  END IF;", "  EXIT WHEN :done;", "END LOOP;", ""]
            with open(os.path.join(d, cls + ".sql"), "w") as f:
                f.write("\n".join(lines))
            n += 1
    # The Java run() decides anew at every visit which statement runs next:
    # `choices:` lets replay follow the explorer's schedule through the LOOP
    # (docs/replay.md); the analysis does not read it.
    most = max((len(st) for st in procs.values()), default=0)
    names = ["c%d" % k for k in range(1, most + 1)] + ["done"]
    with open(os.path.join(d, "isolint.yaml"), "w") as f:
        f.write("schema: schema.sql\n")
        if most:
            f.write("choices: [%s]\n" % ", ".join(names))
    return n


def jdbc_to_pg(sql):
    """PgJDBC's rewriting of `?` to `$1`, `$2`, … (outside literals, quoted names, comments)."""
    out, n, i = [], 0, 0
    pat = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\?", re.S)
    for m in pat.finditer(sql):
        out.append(sql[i : m.start()])
        if m.group(0) == "?":
            n += 1
            out.append("$%d" % n)
        else:
            out.append(m.group(0))
        i = m.end()
    out.append(sql[i:])
    return "".join(out)


def benchbase_check(out, psql):
    """Every extracted statement PREPAREd on PostgreSQL 15 (`psql`: the command, with -d added
    per benchmark) in a fresh database with the benchmark's DDL; the programs are rewritten with
    RAISE EXCEPTION where PostgreSQL rejects a statement (rejected.txt lists them)."""
    import json
    import subprocess

    for name in sorted(os.listdir(out)):
        d = os.path.join(out, name)
        if not os.path.exists(os.path.join(d, "statements.json")):
            continue
        procs = json.load(open(os.path.join(d, "statements.json")))
        run = lambda db, *a: subprocess.run(psql + ["-d", db] + list(a), capture_output=True, text=True)
        db = "bb_" + name
        run("postgres", "-c", "DROP DATABASE IF EXISTS %s" % db, "-c", "CREATE DATABASE %s" % db)
        r = run(db, "-v", "ON_ERROR_STOP=1", "-f", os.path.join(d, "schema.sql"))
        if r.returncode != 0:
            raise SystemExit("%s: the DDL does not load: %s" % (name, r.stderr))
        rejected = {}
        for cls, stmts in procs.items():
            for field, sql in stmts:
                if sql is None:
                    continue
                r = run(db, "-v", "ON_ERROR_STOP=1", "-c", "PREPARE s AS " + jdbc_to_pg(sql))
                err = r.stderr.strip().splitlines()
                if r.returncode != 0 and "could not determine data type" not in r.stderr:
                    rejected[(cls, field)] = err[0].replace("ERROR:", "").strip() if err else "error"
        n = write_programs(d, name, {c: [tuple(x) for x in s] for c, s in procs.items()}, open(os.path.join(d, "schema.sql")).read(), rejected)
        with open(os.path.join(d, "rejected.txt"), "w") as f:
            f.write("".join("%s.%s: %s\n" % (c, fl, m) for (c, fl), m in sorted(rejected.items())))
        print("%s: %d statements PostgreSQL 15 rejects" % (name, len(rejected)), file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1] == "hammerdb":
        hammerdb(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "graphile":
        graphile(sys.argv[2:-1], sys.argv[-1])
    elif sys.argv[1] == "benchbase-check":
        benchbase_check(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "benchbase":
        benchbase(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        raise SystemExit("usage: real_code_extract.py hammerdb TCL OUT | graphile TS... OUT")
