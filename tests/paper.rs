//! The paper's numbers: Table 2 (summary-graph sizes) in all settings.
//! Expected values come from the paper and from the independent
//! implementation that produced ../shared/btp/README.md.

use isolint::btp::yaml;
use isolint::error::SourceFile;
use isolint::summary_graph::{build, Granularity, Settings};

fn load(name: &str) -> isolint::btp::Workload {
    let path = format!("{}/workloads/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
    let file = SourceFile::read(std::path::Path::new(&path)).expect("bundled workload readable");
    yaml::parse(&file).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn setting(granularity: Granularity, foreign_keys: bool) -> Settings {
    Settings {
        granularity,
        foreign_keys,
        same_tuple: false,
    }
}

fn counts(name: &str, s: Settings) -> (usize, usize, usize) {
    let g = build(&load(name), s);
    (g.nodes.len(), g.edges.len(), g.counterflow_edges())
}

use Granularity::{Attribute as Attr, Tuple as Tpl};

#[test]
fn table2_smallbank_every_setting() {
    for g in [Attr, Tpl] {
        for fk in [true, false] {
            assert_eq!(
                counts("smallbank", setting(g, fk)),
                (5, 56, 12),
                "{g:?} fk={fk}"
            );
        }
    }
}

#[test]
fn table2_auction() {
    assert_eq!(counts("auction", setting(Attr, true)), (3, 17, 1));
    assert_eq!(counts("auction", setting(Tpl, true)), (3, 17, 1));
    assert_eq!(counts("auction", setting(Attr, false)), (3, 19, 3));
    assert_eq!(counts("auction", setting(Tpl, false)), (3, 19, 3));
}

#[test]
fn table2_tpcc() {
    assert_eq!(counts("tpcc-paper", setting(Attr, true)), (13, 396, 83));
    assert_eq!(counts("tpcc-paper", setting(Attr, false)), (13, 400, 87));
    assert_eq!(counts("tpcc-paper", setting(Tpl, true)), (13, 704, 157));
    assert_eq!(counts("tpcc-paper", setting(Tpl, false)), (13, 734, 187));
}
