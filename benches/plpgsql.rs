//! The PL/pgSQL front-end on a migration file of 100 routines (TPC-C's
//! five routines, 20 times under new names): scanning the headers,
//! parsing the bodies, inlining and lowering to BTPs. Run with
//! `cargo bench --bench plpgsql`.

fn main() {
    divan::main();
}

/// A workload directory with one migration file of `copies` × 5 routines.
fn migration(copies: usize) -> tempfile::TempDir {
    let root = env!("CARGO_MANIFEST_DIR");
    let src = std::fs::read_to_string(format!(
        "{root}/workloads/tpcc-plpgsql/V3__tpcc_routines.sql"
    ))
    .expect("bundled routines");
    // Abbreviations would repeat: leave them out.
    let src: String = src
        .lines()
        .filter(|l| !l.contains("isolint: abbrev"))
        .map(|l| format!("{l}\n"))
        .collect();
    let names = [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ];
    let mut out = String::new();
    for k in 0..copies {
        let mut copy = src.clone();
        for n in names {
            copy = copy.replace(&format!(" {n}("), &format!(" {n}_{k}("));
        }
        out += &copy;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("V1__routines.sql"), out).expect("write");
    std::fs::write(
        dir.path().join("isolint.yaml"),
        format!("schema: {root}/schemas/tpcc-pgdump.sql\n"),
    )
    .expect("write");
    dir
}

/// Load (scan, parse, lower) a 100-routine migration file.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn lower_100_routines(bencher: divan::Bencher) {
    let dir = migration(20);
    bencher.bench_local(|| {
        let l = isolint::frontend::load(dir.path(), None).expect("loads");
        assert_eq!(l.workload.programs.len(), 100);
        l.workload.programs.len()
    });
}
