//! Branch- and loop-heavy programs (issue 8 item 5, issue 13 item 4),
//! each analysed end to end from SQL text: DDL and program parsed, lowered
//! to BTPs, planned (`unfold::plan`), summary graph built, type-II test.
//! Run with `cargo bench --bench unfold`.

use isolint::analysis::graph::{build, Settings};
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
    isolint::analysis::limits::check_size(&w).expect("fits");
    let g = build(&w, Settings::default());
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
