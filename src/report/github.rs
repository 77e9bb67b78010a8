//! GitHub Actions workflow commands (`::error`, `::notice`).

use super::{edge_line, edit_line, locate, programs_of, RuleId};
use crate::analysis::findings::Findings;
use crate::model::btp::Workload;

/// GitHub Actions workflow commands: one `::error` per witness at the
/// statement that starts its counterflow dependency, `::notice` per fix;
/// each title ends with its rule id (docs/rules.md).
/// `pg`: per witness, what `--postgres-temp`/`--postgres` found (a last
/// line of the annotation; empty without those flags).
pub fn check(w: &Workload, a: &Findings, workload_path: &str, pg: &[super::OnPostgres]) -> String {
    let esc = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let against = super::against(a);
    let mut o = String::new();
    for (i, st) in a.cycles.iter().enumerate() {
        let primary = st.iter().find(|s| s.counterflow).unwrap_or(&st[0]);
        let (file, line) = locate(primary.from_origin.as_ref(), workload_path);
        let line = line.map(|l| format!(",line={l}")).unwrap_or_default();
        let mut body: Vec<String> = st.iter().map(edge_line).collect();
        if let Some(p) = pg.get(i) {
            body.push(format!("On PostgreSQL: {}", p.line));
        }
        o.push_str(&format!(
            "::error file={file}{line},title=isolint%3A not robust against {} [{}]::{}\n",
            against,
            RuleId::cycle(a.method),
            esc(&format!(
                "Dangerous cycle through {}:\n{}",
                programs_of(st).join(", "),
                body.join("\n")
            ))
        ));
    }
    for site in super::raise_sites(w, a, workload_path) {
        let line = site.line.map(|l| format!(",line={l}")).unwrap_or_default();
        o.push_str(&format!(
            "::error file={}{line},title=isolint%3A isolation level too low [{}]::{}\n",
            site.file,
            RuleId::LevelTooLow,
            esc(&site.message)
        ));
    }
    for e in &a.edits {
        let file = e.file.as_deref().unwrap_or(workload_path);
        let line = e.line.map(|l| format!(",line={l}")).unwrap_or_default();
        o.push_str(&format!(
            "::notice file={file}{line},title=isolint fix [{}]::{}\n",
            RuleId::FixForUpdate,
            esc(&edit_line(e))
        ));
    }
    if a.robust {
        o.push_str(&format!(
            "isolint: {} is robust against {}\n",
            w.name, against
        ));
    }
    o
}
