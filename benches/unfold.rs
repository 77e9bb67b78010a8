//! Branch- and loop-heavy programs (issue 8 item 5, issue 13 item 4),
//! each analysed end to end from SQL text: DDL and program parsed, lowered
//! to BTPs, planned once (`unfold::plan`, the size guard's and the
//! graph's), summary graph built, type-II test.
//! Run with `cargo bench --bench unfold`.

use isolint::analysis::graph::{build_planned, Settings};
use isolint::analysis::robustness::{is_robust, Method};
use isolint::model::error::SourceFile;

fn main() {
    divan::main();
}

#[path = "../tests/common/programs.rs"]
mod programs;
use programs::{branchy_loop, twenty_ifs};

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, c INT);\n";

/// Fourteen IF/ELSE blocks with different UPDATEs on one table: 16,384
/// distinct unfoldings (≈5·10¹⁰ occurrence pairs literally, an allocation
/// abort before), analysed as one node.
fn if_else_14() -> String {
    let mut s = String::new();
    for i in 1..=14 {
        s.push_str(&format!(
            "IF :p{i} > 0 THEN\n  UPDATE t SET a = a + 1 WHERE id = :k{i};\nELSE\n  UPDATE t SET b = b + 1 WHERE id = :k{i};\nEND IF;\n"
        ));
    }
    s.push_str("COMMIT;\n");
    s
}

/// With a reader next to it, so the graph has counterflow edges.
const READER: &str = "SELECT a, b INTO :x, :y FROM t WHERE id = :k;\nCOMMIT;\n";

/// Panics if the SQL does not lower or the workload is refused: a number
/// measured on an error path would be meaningless.
fn analyse(program: &str) -> bool {
    let schema = isolint::frontend::sql::ddl::parse_schema(&SourceFile::new("schema.sql", SCHEMA))
        .expect("schema parses");
    let sources = [
        SourceFile::new("P.sql", program),
        SourceFile::new("Reader.sql", READER),
    ];
    let w = isolint::frontend::lower::lower_programs("bench".into(), None, schema, &sources)
        .expect("programs lower")
        .workload;
    // Planned once: the guard's plan is the graph's (a loop-heavy
    // program's reduction is most of its cost).
    let plan = isolint::analysis::unfold::plan(&w);
    isolint::analysis::limits::check_planned(&w, &plan).expect("fits");
    let g = build_planned(&w, &plan, Settings::default());
    is_robust(&g, None, Method::TypeII)
}

#[divan::bench(sample_count = 10)]
fn sql_twenty_ifs(bencher: divan::Bencher) {
    let text = twenty_ifs();
    bencher.bench_local(|| analyse(&text));
}

#[divan::bench(sample_count = 10)]
fn sql_branchy_loop(bencher: divan::Bencher) {
    let text = branchy_loop();
    bencher.bench_local(|| analyse(&text));
}

#[divan::bench(sample_count = 10)]
fn sql_if_else_14(bencher: divan::Bencher) {
    let text = if_else_14();
    bencher.bench_local(|| analyse(&text));
}

/// `n` loops in sequence, each around a read and an update of one row
/// (issue 26 item 3): 3ⁿ unfoldings, 6n·3ⁿ⁻¹ occurrences literally;
/// `unfold::subsume` keeps the one that takes every loop twice.
fn loops_in_sequence(n: usize) -> String {
    let mut s = String::new();
    for i in 1..=n {
        s.push_str(&format!(
            "FOR i{i} IN 1..:n{i} LOOP\n  SELECT a INTO :x{i} FROM t WHERE id = :i{i};\n  UPDATE t SET b = :x{i} WHERE id = :i{i};\nEND LOOP;\n"
        ));
    }
    s.push_str("COMMIT;\n");
    s
}

#[divan::bench(sample_count = 10, args = [3, 5, 7, 9])]
fn sql_loops_in_sequence(bencher: divan::Bencher, n: usize) {
    let text = loops_in_sequence(n);
    bencher.bench_local(|| analyse(&text));
}

/// The same without the reduction (every literal unfolding a node), for
/// the before/after in README: 3⁵ = 243 unfoldings.
#[divan::bench(sample_count = 10, args = [3, 5])]
fn sql_loops_in_sequence_unreduced(bencher: divan::Bencher, n: usize) {
    use isolint::analysis::graph::build_from_ltps;
    use isolint::analysis::unfold::{unfold_workload_with, Mode};
    let text = loops_in_sequence(n);
    let schema = isolint::frontend::sql::ddl::parse_schema(&SourceFile::new("schema.sql", SCHEMA))
        .expect("schema parses");
    let sources = [
        SourceFile::new("P.sql", text.as_str()),
        SourceFile::new("Reader.sql", READER),
    ];
    let w = isolint::frontend::lower::lower_programs("bench".into(), None, schema, &sources)
        .expect("programs lower")
        .workload;
    bencher.bench_local(|| {
        let ltps = unfold_workload_with(&w, &[Mode::Literal, Mode::Literal]);
        is_robust(
            &build_from_ltps(&w, ltps, Settings::default()),
            None,
            Method::TypeII,
        )
    });
}
