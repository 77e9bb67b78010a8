//! A generated SQL application for benchmarks and scale tests: a schema of
//! tables linked by foreign keys and `n` transaction programs mixing
//! key-based reads and writes (lookups by primary key, balance updates,
//! inserts of child rows) with predicate-based ones (counts and sums over
//! a status column, bulk status updates), as an ordinary OLTP app has.
//! The predicate reads make it non-robust in a way no `FOR UPDATE` fixes.

use super::Rng;

const TABLES: usize = 12;

/// The DDL: `t0 … t11`, each `id` primary key, `parent` referencing the
/// previous table (t0 none), a balance, a counter, a status and a note.
pub fn schema() -> String {
    let mut s = String::new();
    for t in 0..TABLES {
        s.push_str(&format!(
            "CREATE TABLE t{t} (\n    id INTEGER PRIMARY KEY,\n"
        ));
        if t > 0 {
            s.push_str("    parent INTEGER NOT NULL,\n");
        }
        s.push_str("    balance NUMERIC(12, 2) NOT NULL,\n    counter INTEGER NOT NULL,\n    status VARCHAR(16) NOT NULL,\n    note VARCHAR(64)");
        if t > 0 {
            s.push_str(&format!(
                ",\n    CONSTRAINT f{t} FOREIGN KEY (parent) REFERENCES t{} (id)",
                t - 1
            ));
        }
        s.push_str("\n);\n\n");
    }
    s
}

/// Program `i` of the app (deterministic in `seed`): 2–6 statements.
/// `predicate_pct` is the share of predicate-based statements.
pub fn program(seed: u64, i: usize, predicate_pct: u64) -> String {
    let mut r = Rng((seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
    let mut s = format!("-- generated program {i}\n");
    let n = 2 + r.below(5);
    let home = r.below(TABLES);
    for k in 0..n {
        // Mostly the program's own table and its neighbours, as real
        // programs touch a few related tables.
        let t = (home + r.below(3)) % TABLES;
        let stmt = if r.chance(predicate_pct) {
            match r.below(3) {
                0 => format!("SELECT COUNT(*) INTO :n{k} FROM t{t} WHERE status = :s{k};\n"),
                1 => format!("SELECT SUM(balance) INTO :b{k} FROM t{t} WHERE status = :s{k} AND counter > :c{k};\n"),
                _ => format!("UPDATE t{t} SET status = :s{k} WHERE counter < :c{k};\n"),
            }
        } else {
            match r.below(6) {
                0 | 1 => format!("SELECT balance, counter INTO :b{k}, :c{k} FROM t{t} WHERE id = :id{k};\n"),
                2 => format!("UPDATE t{t} SET balance = balance + :v{k} WHERE id = :id{k};\n"),
                3 => format!("UPDATE t{t} SET counter = counter + 1, note = :note{k} WHERE id = :id{k};\n"),
                4 if t > 0 => format!(
                    "INSERT INTO t{t} (id, parent, balance, counter, status, note) VALUES (:new{k}, :id{k}, 0, 0, 'new', NULL);\n"
                ),
                _ => format!("SELECT status INTO :st{k} FROM t{t} WHERE id = :id{k};\n"),
            }
        };
        if r.chance(15) {
            s.push_str(&format!("IF :flag{k} THEN\n    {stmt}END IF;\n"));
        } else {
            s.push_str(&stmt);
        }
    }
    s.push_str("COMMIT;\n");
    s
}

/// Write the app to `dir`: `schema.sql`, `isolint.yaml` and `n` programs.
pub fn write(
    dir: &std::path::Path,
    seed: u64,
    n: usize,
    predicate_pct: u64,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("schema.sql"), schema())?;
    std::fs::write(
        dir.join("isolint.yaml"),
        format!("name: Generated{n}\nschema: schema.sql\n"),
    )?;
    for i in 0..n {
        std::fs::write(
            dir.join(format!("P{i:03}.sql")),
            program(seed, i, predicate_pct),
        )?;
    }
    Ok(())
}
