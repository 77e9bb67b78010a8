//! The random SQL workload generator (issue 15): every workload it writes
//! is accepted by the front-end (it writes only what the front-end
//! models), and the fixed-seed batch uses every form of the grammar.

use std::collections::BTreeSet;

use isolint::model::error::SourceFile;
use isolint_testkit::sqlgen::{workload, Form};

fn load(seed: u64) -> Result<isolint::frontend::Loaded, String> {
    let w = workload(seed);
    let schema = SourceFile::new("schema.sql", w.schema.as_str());
    let programs: Vec<SourceFile> = w
        .programs
        .iter()
        .map(|(n, t)| SourceFile::new(format!("{n}.sql"), t.as_str()))
        .collect();
    isolint::frontend::sql_dir::lower_texts(&schema, &programs).map_err(|e| {
        let texts: Vec<String> = w
            .programs
            .iter()
            .map(|(n, t)| format!("-- {n}\n{t}"))
            .collect();
        format!(
            "seed {seed}: {}\n{}\n{}",
            e.message,
            w.schema,
            texts.join("\n")
        )
    })
}

#[test]
fn generated_workloads_load_and_cover_every_form() {
    let mut seen = BTreeSet::new();
    let mut errors = vec![];
    // The seeds of the PostgreSQL batch (tests/pg_soundness.rs).
    for seed in 0..300 {
        if let Err(e) = load(seed) {
            errors.push(e);
        }
        seen.extend(workload(seed).forms);
    }
    assert!(
        errors.is_empty(),
        "{} of 300 workloads do not load; the first:\n{}",
        errors.len(),
        errors.first().map_or("", |e| e.as_str())
    );
    let missing: Vec<Form> = Form::ALL
        .iter()
        .copied()
        .filter(|f| !seen.contains(f))
        .collect();
    assert!(missing.is_empty(), "forms never generated: {missing:?}");
}

/// Writes the workloads of seeds `ISOLINT_SQLGEN_FROM..ISOLINT_SQLGEN_TO`
/// as directories under `ISOLINT_SQLGEN_DIR`, to look at one by hand
/// (`isolint analyze DIR/seed-N`).
#[test]
#[ignore]
fn write_workloads() {
    let var = |n: &str| std::env::var(n).ok();
    let (Some(dir), Some(from), Some(to)) = (
        var("ISOLINT_SQLGEN_DIR"),
        var("ISOLINT_SQLGEN_FROM").and_then(|v| v.parse::<u64>().ok()),
        var("ISOLINT_SQLGEN_TO").and_then(|v| v.parse::<u64>().ok()),
    ) else {
        return;
    };
    for seed in from..to {
        let w = workload(seed);
        let d = std::path::Path::new(&dir).join(format!("seed-{seed}"));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("isolint.yaml"), "schema: schema.sql\n").expect("write");
        std::fs::write(d.join("schema.sql"), &w.schema).expect("write");
        for (n, t) in &w.programs {
            std::fs::write(d.join(format!("{n}.sql")), t).expect("write");
        }
    }
}

/// docs/postgres-features.md lists PostgreSQL 15's features and, for each,
/// the generator form that exercises it or why none does (issue 21). Every
/// form must have its row, and every form a row names must exist, so the
/// catalogue cannot drift from the generator.
#[test]
fn every_form_is_in_the_catalogue() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/postgres-features.md"),
    )
    .expect("docs/postgres-features.md");
    let named: BTreeSet<String> = doc
        .split("`Form::")
        .skip(1)
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_string)
        .collect();
    let forms: BTreeSet<String> = Form::ALL.iter().map(|f| format!("{f:?}")).collect();
    let unlisted: Vec<&String> = forms.difference(&named).collect();
    let unknown: Vec<&String> = named.difference(&forms).collect();
    assert!(
        unlisted.is_empty(),
        "forms with no catalogue row: {unlisted:?}"
    );
    assert!(
        unknown.is_empty(),
        "catalogue rows naming no form: {unknown:?}"
    );
}

/// `WITH w AS (UPDATE …) SELECT … INTO v FROM u` assigns v, as PL/pgSQL
/// does (found by the batch: the INTO was sent to PostgreSQL as `INTO $2`,
/// a syntax error, and the lowering read it as no assignment). An INSERT
/// INTO after a WITH is no target (the control).
#[test]
fn into_after_a_with_is_a_target() {
    use isolint::frontend::sql::statement::strip_into;
    let (text, vars) = strip_into(
        "WITH w AS (UPDATE t SET a = a + 1 WHERE id = :k RETURNING a) SELECT count(*) INTO :v1 FROM u WHERE b = :x",
    );
    assert_eq!(vars, vec!["v1".to_string()]);
    assert!(!text.contains("INTO"), "{text}");
    let (text, vars) = strip_into(
        "WITH w AS (UPDATE t SET a = a + 1 WHERE id = :k RETURNING a) INSERT INTO u (id) SELECT a FROM w",
    );
    assert!(vars.is_empty(), "{vars:?}");
    assert!(text.contains("INSERT INTO u"), "{text}");
}
