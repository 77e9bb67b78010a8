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

const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, c INT);\n";

/// Twenty `IF … THEN UPDATE … END IF;` blocks: 2²⁰ unfoldings, analysed
/// through its one maximal unfolding.
fn twenty_ifs() -> String {
    let mut s = String::new();
    for i in 1..=20 {
        s.push_str(&format!(
            "IF :p{i} > 0 THEN\n  UPDATE t SET a = a + {i} WHERE id = :k{i};\nEND IF;\n"
        ));
    }
    s.push_str("COMMIT;\n");
    s
}

/// A loop holding a 15-branch ELSIF chain and three more IFs/WHILEs
/// without SQL, next to two UPDATEs: 37,057 unfoldings before collapsing
/// the statement-free parts, 3 after.
fn branchy_loop() -> String {
    let mut s = String::from("FOR i IN 1..:n LOOP\n  IF :x = 0 THEN\n    SELECT 0 INTO :v;\n");
    for k in 1..15 {
        s.push_str(&format!("  ELSIF :x = {k} THEN\n    SELECT {k} INTO :v;\n"));
    }
    s.push_str("  END IF;\n");
    s.push_str("  IF :v > 3 THEN\n    SELECT 1 INTO :w;\n  END IF;\n");
    s.push_str("  WHILE :w < 3 LOOP\n    SELECT :w + 1 INTO :w;\n  END LOOP;\n");
    s.push_str(
        "  IF :w > 2 THEN\n    SELECT 0 INTO :w;\n  ELSE\n    SELECT 2 INTO :w;\n  END IF;\n",
    );
    s.push_str("  UPDATE t SET a = a + :v WHERE id = :i;\n");
    s.push_str("  UPDATE t SET b = b + :w WHERE id = :i;\n");
    s.push_str("END LOOP;\nCOMMIT;\n");
    s
}

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
