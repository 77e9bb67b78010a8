//! The paper's numbers: Table 2 (summary-graph sizes) in all settings.
//! Expected values come from the paper and from the independent
//! implementation that produced ../shared/btp/README.md.

use isolint::analysis::graph::{build, Granularity, Settings};
use isolint::frontend::yaml;
use isolint::model::error::SourceFile;

fn load(name: &str) -> isolint::model::btp::Workload {
    let path = format!("{}/workloads/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
    let file = isolint::frontend::read_source(std::path::Path::new(&path))
        .expect("bundled workload readable");
    yaml::parse(&file).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

/// The same benchmark lowered from SQL (workloads/NAME/*.sql + schema).
fn load_sql(name: &str) -> isolint::model::btp::Workload {
    let path = format!("{}/workloads/{name}", env!("CARGO_MANIFEST_DIR"));
    isolint::frontend::load(std::path::Path::new(&path), None)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"))
        .workload
}

/// Both encodings of a benchmark: every number below must hold for the
/// paper's BTPs and for isolint's lowering of the SQL programs.
fn both(name: &str) -> [isolint::model::btp::Workload; 2] {
    [load(name), load_sql(name)]
}

fn setting(granularity: Granularity, foreign_keys: bool) -> Settings {
    Settings {
        granularity,
        foreign_keys,
        same_tuple: false,
    }
}

/// (nodes, edges, counterflow edges), asserted equal for YAML and SQL.
fn counts(name: &str, s: Settings) -> (usize, usize, usize) {
    let [a, b] = both(name).map(|w| {
        let g = build(&w, s);
        (g.nodes.len(), g.edges.len(), g.counterflow_edges())
    });
    assert_eq!(a, b, "{name} {}: BTP YAML vs SQL", s.label());
    a
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

use isolint::analysis::robustness::Method;
use isolint::analysis::subsets::maximal_robust_subsets;

/// Maximal robust subsets as "{A, B}" strings of abbreviations, sorted.
fn subsets(name: &str, s: Settings, method: Method) -> Vec<String> {
    let [a, b] = both(name).map(|w| subsets_of(&w, s, method));
    assert_eq!(a, b, "{name} {}: BTP YAML vs SQL", s.label());
    a
}

fn subsets_of(w: &isolint::model::btp::Workload, s: Settings, method: Method) -> Vec<String> {
    let g = build(w, s);
    let found = maximal_robust_subsets(&g, method);
    assert!(found.complete);
    let mut out: Vec<String> = found
        .sets
        .into_iter()
        .map(|set| {
            let mut names: Vec<&str> = set.iter().map(|&p| w.programs[p].short()).collect();
            names.sort();
            format!("{{{}}}", names.join(", "))
        })
        .collect();
    out.sort();
    out
}

fn expect(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// Rows of Figures 6 and 7: tpl dep, attr dep, tpl dep + FK, attr dep + FK.
const ROWS: [(Granularity, bool); 4] = [(Tpl, false), (Attr, false), (Tpl, true), (Attr, true)];

#[test]
fn figure6_type2_subsets() {
    for (g, fk) in ROWS {
        let s = setting(g, fk);
        assert_eq!(
            subsets("smallbank", s, Method::TypeII),
            expect(&["{Am, DC, TS}", "{Bal, DC}", "{Bal, TS}"]),
            "SmallBank {}",
            s.label()
        );
        let tpcc: &[&str] = if g == Attr && fk {
            &["{OS, Pay, SL}", "{NO, Pay}"]
        } else {
            &["{OS, SL}", "{NO}"]
        };
        assert_eq!(
            subsets("tpcc-paper", s, Method::TypeII),
            expect(tpcc),
            "TPC-C {}",
            s.label()
        );
        let auction: &[&str] = if fk { &["{FB, PB}"] } else { &["{FB}"] };
        assert_eq!(
            subsets("auction", s, Method::TypeII),
            expect(auction),
            "Auction {}",
            s.label()
        );
    }
}

#[test]
fn figure7_type1_subsets() {
    for (g, fk) in ROWS {
        let s = setting(g, fk);
        assert_eq!(
            subsets("smallbank", s, Method::TypeI),
            expect(&["{Am, DC, TS}", "{Bal}"]),
            "SmallBank {}",
            s.label()
        );
        let tpcc: &[&str] = if g == Attr && fk {
            &["{NO, Pay}", "{Pay, SL}", "{OS, SL}"]
        } else {
            &["{OS, SL}", "{NO}"]
        };
        assert_eq!(
            subsets("tpcc-paper", s, Method::TypeI),
            expect(tpcc),
            "TPC-C {}",
            s.label()
        );
        let auction: &[&str] = if fk { &["{PB}", "{FB}"] } else { &["{FB}"] };
        assert_eq!(
            subsets("auction", s, Method::TypeI),
            expect(auction),
            "Auction {}",
            s.label()
        );
    }
}

use isolint::model::generate::auction;

/// Table 2 and Section 7.3: Auction(n) has 3n nodes, 8n + 9n² edges, n of
/// them counterflow, and is robust for every n.
#[test]
fn auction_n_counts_and_robust() {
    for n in (1..=10).chain([100]) {
        let w = auction(n);
        let g = build(&w, setting(Attr, true));
        assert_eq!(
            (g.nodes.len(), g.edges.len(), g.counterflow_edges()),
            (3 * n, 8 * n + 9 * n * n, n),
            "Auction({n})"
        );
        assert!(
            isolint::analysis::robustness::is_robust(&g, None, Method::TypeII),
            "Auction({n}) robust"
        );
    }
}

#[test]
fn generated_auction_1_round_trips_and_matches_bundled_counts() {
    let text = isolint::report::yaml::to_yaml(&auction(1));
    let file = SourceFile::new("auction1.yaml", text.as_str());
    let w = yaml::parse(&file).expect("generated YAML parses");
    assert_eq!(w, auction(1));
    let g = build(&w, setting(Attr, false));
    assert_eq!(
        (g.nodes.len(), g.edges.len(), g.counterflow_edges()),
        (3, 19, 3)
    );
}

use isolint::analysis::promote::{promoted, suggest, Budget, Suggestion};

/// SmallBank's fix: WriteCheck's lost update needs its Checking read
/// locked (q15), its Savings read q14 then still precedes a write-read
/// entry (type-II with Amalgamate/TransactSavings), and Balance's Savings
/// read q7 precedes its Checking read (the Balance/Amalgamate anomaly).
/// No two promotions suffice, so the smallest set is {q7, q14, q15}.
#[test]
fn smallbank_fix_is_three_locking_reads_and_verified() {
    let w = load("smallbank");
    let s = Settings::default();
    let Suggestion::Promote(set) = suggest(&w, s, Method::TypeII, Budget::default()) else {
        panic!("SmallBank has a fix");
    };
    let mut ids: Vec<String> = set
        .iter()
        .map(|&(p, q)| format!("{}.{}", w.programs[p].name, w.programs[p].statements[q].id))
        .collect();
    ids.sort();
    assert_eq!(ids, ["Balance.q7", "WriteCheck.q14", "WriteCheck.q15"]);
    let fixed = promoted(&w, &set);
    assert!(isolint::analysis::robustness::is_robust(
        &build(&fixed, s),
        None,
        Method::TypeII
    ));
}
