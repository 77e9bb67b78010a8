//! Issue 26, "a house that is easy to live in": the command line behaves
//! like ripgrep (`--quiet`, per-command `--format` lists, warnings that
//! survive a closed stderr), the report's rule ids are one enum, and the
//! positions table of docs/sql-frontend.md names the code and the test of
//! every construct.

use std::io::Read;
use std::process::{Command, Stdio};

fn isolint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_isolint"))
}

/// (exit code, stdout, stderr) of `isolint args`.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = isolint().args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The values `--help` lists under `--format`: clap writes them inline
/// (`[possible values: a, b]`, maybe wrapped) when none has a doc line,
/// else as lines `- NAME` or `- NAME: doc` before the default.
fn formats_in_help(command: &[&str]) -> Vec<String> {
    let mut args = command.to_vec();
    args.push("--help");
    let (code, help, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let after = help
        .split_once("--format <FORMAT>")
        .unwrap_or_else(|| panic!("no --format in {command:?}'s help:\n{help}"))
        .1;
    // The option's own lines: up to the next option (a line indented
    // less than the value list's, starting with `-`).
    let own: Vec<&str> = after
        .lines()
        .take_while(|l| {
            let indent = l.len() - l.trim_start().len();
            !(l.trim_start().starts_with('-') && indent < 8)
        })
        .collect();
    let flat = own
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if let Some((_, inline)) = flat.split_once("[possible values: ") {
        let inline = inline.split(']').next().unwrap_or("");
        return inline.split(", ").map(str::to_string).collect();
    }
    let list = flat.split_once("Possible values:").map_or("", |x| x.1);
    let list = list.split("[default:").next().unwrap_or("");
    list.split(" - ")
        .map(|v| v.trim().trim_start_matches("- "))
        .filter(|v| !v.is_empty())
        .map(|v| v.split(':').next().unwrap_or(v).trim().to_string())
        .collect()
}

/// Each command's `--help` lists exactly the formats it renders (the
/// renderers in src/report: check has text, json, SARIF and GitHub; graph
/// dot and json; btp the Figure 2 text and BTP YAML; the others text and
/// json; invariants also a Markdown section). Before, every command listed
/// all seven and rejected most of them at run time.
#[test]
fn help_lists_only_the_formats_a_command_accepts() {
    let expected: &[(&[&str], &[&str])] = &[
        (&["analyze"], &["text", "json"]),
        (&["check"], &["text", "json", "sarif", "github"]),
        (&["allocate"], &["text", "json"]),
        (&["subsets"], &["text", "json"]),
        (&["graph"], &["dot", "json"]),
        (&["btp"], &["text", "yaml"]),
        (&["replay"], &["text", "json"]),
        (&["invariants"], &["text", "json", "markdown"]),
    ];
    for (command, formats) in expected {
        assert_eq!(&formats_in_help(command), formats, "{command:?}");
    }
    // A format the command does not offer is a usage error (exit 2) that
    // names the ones it does.
    let (code, _, err) = run(&["analyze", "workloads/auction", "--format", "sarif"]);
    assert_eq!(code, 2);
    assert!(err.contains("possible values: text, json"), "{err}");
    // Control: one it offers is accepted.
    let (code, out, _) = run(&["analyze", "workloads/auction", "--format", "json"]);
    assert_eq!(code, 0);
    assert!(out.starts_with('{'), "{out}");
}

/// `--quiet`: nothing on stdout, no warnings on stderr, the exit code is
/// the answer. TPC-C as the paper models it is not robust (Section 7.2,
/// Figure 6: {Delivery, NewOrder, Payment} together are not) and warns
/// that foreign-key checks are left out; the auction of Section 7.3 is
/// robust. Controls: the same runs without `--quiet` print both.
#[test]
fn quiet_prints_nothing_and_keeps_the_exit_code() {
    let (code, out, err) = run(&["check", "workloads/tpcc-paper", "--no-confirm"]);
    assert_eq!(code, 1, "{err}");
    assert!(!out.is_empty() && err.contains("warning"), "{out}\n{err}");
    let (code, out, err) = run(&["check", "-q", "workloads/tpcc-paper", "--no-confirm"]);
    assert_eq!((code, out.as_str(), err.as_str()), (1, "", ""));
    let (code, out, err) = run(&["--quiet", "check", "workloads/auction", "--no-confirm"]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    // Errors are still said: no answer is not a silent answer.
    let (code, _, err) = run(&["check", "-q", "no/such/dir"]);
    assert_eq!(code, 2);
    assert!(!err.is_empty());
}

/// Warnings go to a stderr whose reader has gone (`isolint … 2>&1 | head
/// -1`): writes fail with EPIPE (Rust ignores SIGPIPE), and `eprintln!`
/// would panic (exit 101). The run must finish as with an open stderr:
/// the same exit code (1, TPC-C is not robust) and the same stdout.
#[test]
fn a_closed_stderr_changes_neither_exit_code_nor_output() {
    let args = ["check", "workloads/tpcc-paper", "--no-confirm"];
    let (code, expected, err) = run(&args);
    assert_eq!(code, 1);
    assert!(err.contains("warning"), "the control must write to stderr");
    let mut child = isolint()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns");
    // Close the read end before the child writes its first warning.
    drop(child.stderr.take());
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("reads");
    let status = child.wait().expect("waits");
    assert_eq!(status.code(), Some(1), "a panic exits 101");
    assert_eq!(out, expected);
}

/// Only `cli::say` writes to standard error: `eprint!`/`eprintln!` panic
/// when the write fails, so none may appear in the program's code.
#[test]
fn no_eprintln_in_the_program() {
    let mut stack = vec![std::path::PathBuf::from("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).expect("read");
                // Test modules may print; they start at `#[cfg(test)]`.
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                for m in ["eprintln!(", "eprint!(", "println!(", "print!("] {
                    assert!(!code.contains(m), "{} uses {m}", p.display());
                }
            }
        }
    }
}

/// The rule ids of one `check` run, per format: SARIF's `ruleId`s,
/// GitHub's `[id]` title tags, JSON's `rule` keys, the text's `[id]` tags.
fn rule_ids(extra: &[&str]) -> Vec<std::collections::BTreeSet<String>> {
    let mut sets = vec![];
    for format in ["sarif", "github", "json", "text"] {
        // `--levels` makes the levels the team's own, so the text output
        // names each program to raise (at PostgreSQL's defaults it says
        // "run these programs under SERIALIZABLE" once instead).
        let mut args = vec![
            "check",
            "workloads/smallbank",
            "--no-confirm",
            "--levels",
            "Balance=read-committed",
        ];
        args.extend(extra);
        args.extend(["--format", format]);
        let (code, out, err) = run(&args);
        assert_eq!(code, 1, "{err}");
        let ids: std::collections::BTreeSet<String> = match format {
            "sarif" | "json" => {
                let v: serde_json::Value = serde_json::from_str(&out).expect("json");
                let mut found = vec![];
                collect_rules(&v, &mut found);
                found.into_iter().collect()
            }
            _ => out
                .lines()
                .filter_map(|l| {
                    let l = l.split("::").take(2).collect::<Vec<_>>().join("::");
                    let start = l.rfind(" [")?;
                    let rest = &l[start + 2..];
                    Some(rest[..rest.find(']')?].to_string())
                })
                .collect(),
        };
        sets.push(ids);
    }
    sets
}

/// Every `ruleId` (SARIF results) or `rule` (JSON) value in `v`.
fn collect_rules(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x.as_str()) {
                    ("ruleId" | "rule", Some(id)) => out.push(id.to_string()),
                    _ => collect_rules(x, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_rules(x, out)),
        _ => {}
    }
}

/// SARIF, GitHub, JSON and text name the same findings by the same ids,
/// and every id is a heading of docs/rules.md. SmallBank (not robust,
/// Figure 6) at the default levels gives all three `check` findings: its
/// cycle, programs below their lowest robust level, the FOR UPDATE fix.
/// Control: with `--method type1` the cycle is `mvrc-type1-cycle` in
/// every format (a fixed list of ids would fail one of the two).
#[test]
fn rule_ids_agree_across_formats() {
    let rules_doc = std::fs::read_to_string("docs/rules.md").expect("docs/rules.md");
    for (extra, cycle) in [
        (&[][..], "mvrc-type2-cycle"),
        (&["--method", "type1"][..], "mvrc-type1-cycle"),
    ] {
        let sets = rule_ids(extra);
        let expected: std::collections::BTreeSet<String> =
            [cycle, "isolation-level-too-low", "mvrc-fix-for-update"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        for (format, ids) in ["sarif", "github", "json", "text"].iter().zip(&sets) {
            assert_eq!(ids, &expected, "{format} {extra:?}");
        }
        for id in &expected {
            assert!(rules_doc.contains(&format!("## `{id}`")), "{id}");
        }
    }
}

/// The rows of docs/sql-frontend.md's positions table: (position, the
/// third column).
fn positions_rows() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string("docs/sql-frontend.md").expect("doc");
    let table = doc
        .split_once("| Position | Rule | Code · test · generated forms |")
        .expect("the positions table has its code/test column")
        .1;
    table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            // Cells split at ` | ` (a `\|` inside a cell is escaped).
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").collect();
            (
                cells[0].trim().to_string(),
                cells.last().unwrap_or(&"").trim().to_string(),
            )
        })
        .collect()
}

/// The backticked words of `cell`.
fn ticked(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// Every construct of the positions table names the code that lowers or
/// rejects it and a test, and both exist: the file, the function in
/// parentheses, the test function in its file. Every form the random
/// generator writes (`sqlgen::Form::ALL`, the constructs the differential
/// tests cover) has a row. A row without a test, a renamed test or a new
/// generated form without a row fails here.
#[test]
fn positions_table_names_code_and_test_of_every_construct() {
    let rows = positions_rows();
    assert!(rows.len() >= 40, "{} rows", rows.len());
    let mut forms_named = std::collections::BTreeSet::new();
    for (position, cell) in &rows {
        let words = ticked(cell);
        let files: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| w.ends_with(".rs"))
            .collect();
        assert!(!files.is_empty(), "no code named for {position}: {cell}");
        let mut sources = String::new();
        for f in &files {
            let path = format!("src/frontend/{f}");
            let text =
                std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{path} ({position})"));
            sources.push_str(&text);
        }
        // Functions named in parentheses after the files.
        for part in cell.split('(').skip(1) {
            for f in ticked(part.split(')').next().unwrap_or("")) {
                assert!(
                    sources.contains(&format!("fn {f}(")) || sources.contains(&format!("fn {f}<")),
                    "no fn {f} in {files:?} ({position})"
                );
            }
        }
        let tests: Vec<&str> = words.iter().copied().filter(|w| w.contains("::")).collect();
        assert!(!tests.is_empty(), "no test named for {position}: {cell}");
        for t in tests {
            let (file, name) = t.rsplit_once("::").expect("file::test");
            let text =
                std::fs::read_to_string(file).unwrap_or_else(|_| panic!("{file} ({position})"));
            let at = text
                .find(&format!("fn {name}()"))
                .unwrap_or_else(|| panic!("no test {name} in {file} ({position})"));
            assert!(
                text[..at]
                    .rfind("#[test]")
                    .is_some_and(|t| !text[t..at].contains("\nfn ")),
                "{name} in {file} is not a #[test] ({position})"
            );
        }
        if let Some((_, forms)) = cell.split_once("forms ") {
            forms_named.extend(ticked(forms).into_iter().map(str::to_string));
        }
    }
    for form in isolint_testkit::sqlgen::Form::ALL {
        let name = format!("{form:?}");
        assert!(
            forms_named.contains(&name),
            "the generated form {name} has no row in docs/sql-frontend.md's positions table"
        );
    }
    // Every name in a forms list is a real form (no typo hides a gap).
    let all: std::collections::BTreeSet<String> = isolint_testkit::sqlgen::Form::ALL
        .iter()
        .map(|f| format!("{f:?}"))
        .collect();
    for f in &forms_named {
        assert!(all.contains(f), "{f} is no sqlgen::Form");
    }
}

/// `blk.a` where `blk` labels a block that declares no `a` and is also
/// the alias of a table: PostgreSQL reads it as that table's column.
/// Checked on PostgreSQL 15.8: with t = {(1, 10)}, `SELECT f(1)` returns
/// 10 and leaves a = 11. isolint wrote the reference twice (`blk.ablk.a`,
/// found while splitting `plenv::rewrite`) and rejected the routine.
/// Control: the same routine with the alias `x` gives the same BTPs (a
/// key sel reading {a}, then the key upd).
#[test]
fn block_label_naming_a_table_alias_is_its_column() {
    let btp = |alias: &str| {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        std::fs::write(
            p.join("schema.sql"),
            "CREATE TABLE t (id int PRIMARY KEY, a int);\n",
        )
        .expect("schema");
        std::fs::write(p.join("isolint.yaml"), "schema: schema.sql\n").expect("yaml");
        std::fs::write(
            p.join("f.sql"),
            format!(
                "CREATE FUNCTION f(k int) RETURNS int LANGUAGE plpgsql AS $$\n<<blk>>\nDECLARE\n  v int;\nBEGIN\n  SELECT {alias}.a INTO v FROM t {alias} WHERE {alias}.id = k;\n  UPDATE t SET a = v + 1 WHERE id = k;\n  RETURN v;\nEND;\n$$;\n"
            ),
        )
        .expect("f");
        let (code, out, err) = run(&["btp", p.to_str().expect("utf-8")]);
        assert_eq!(code, 0, "{alias}: {err}");
        // The table, without the temporary directory's name.
        out.lines()
            .skip(1)
            .map(|l| l.split(p.to_str().unwrap_or("")).collect::<String>())
            .collect::<Vec<_>>()
    };
    let labelled = btp("blk");
    assert_eq!(labelled, btp("x"));
    assert!(
        labelled
            .iter()
            .any(|l| l.contains("key sel") && l.contains("{a}")),
        "{labelled:#?}"
    );
}
