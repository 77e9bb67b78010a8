//! SQL programs whose unfoldings explode, for the structural tests and
//! the unfolding benchmarks (against `CREATE TABLE t (id INT PRIMARY KEY,
//! a INT, b INT, c INT)`).

/// Twenty `IF … THEN UPDATE … END IF;` blocks: 2²⁰ unfoldings, analysed
/// through its one maximal unfolding.
pub fn twenty_ifs() -> String {
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
pub fn branchy_loop() -> String {
    // `SELECT k INTO :v` (no table) is the front-end's statement-free
    // assignment: it lowers to nothing (with a warning).
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
