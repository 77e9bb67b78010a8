//! Which errors an EXCEPTION handler's conditions catch, as PL/pgSQL
//! decides it (`exception_matches_conditions` in pl_exec.c): a condition
//! name stands for its SQLSTATE (`plerrcodes.tsv`: PostgreSQL 15's
//! condition names, from its errcodes table); a SQLSTATE ending in `000`
//! is a class and matches every code of the class; `OTHERS` matches every
//! error but query_canceled (57014) and assert_failure (P0004).

/// PostgreSQL 15's condition names and their SQLSTATEs, one a line.
const NAMES: &str = include_str!("plerrcodes.tsv");

/// The SQLSTATE a condition stands for: a name, or `SQLSTATE 'xxxxx'`.
fn code_of(cond: &str) -> Option<String> {
    let c = cond.trim();
    let upper = c.to_ascii_uppercase();
    if let Some(rest) = upper.strip_prefix("SQLSTATE") {
        let code = rest.trim().trim_matches('\'');
        return (code.len() == 5).then(|| code.to_string());
    }
    let name = c.to_ascii_lowercase();
    NAMES.lines().find_map(|l| {
        let (n, code) = l.split_once('\t')?;
        (n == name).then(|| code.to_string())
    })
}

/// Do the conditions `conds` (as written between WHEN and THEN: `a OR b`)
/// catch an error with SQLSTATE `code`?
pub fn catches(conds: &str, code: &str) -> bool {
    conds
        .split(|c: char| c.is_whitespace())
        .collect::<Vec<_>>()
        .join(" ")
        .split(" OR ")
        .flat_map(|p| p.split(" or "))
        .flat_map(|p| p.split(" Or "))
        .any(|cond| {
            let cond = cond.trim();
            if cond.eq_ignore_ascii_case("others") {
                return code != "57014" && code != "P0004";
            }
            match code_of(cond) {
                Some(want) if want.ends_with("000") => code.get(..2) == want.get(..2),
                Some(want) => want == code,
                None => false,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::catches;

    #[test]
    fn conditions_catch_as_plpgsql_does() {
        assert!(catches("no_data_found", "P0002"));
        assert!(!catches("no_data_found", "P0003"));
        assert!(catches("too_many_rows OR no_data_found", "P0002"));
        assert!(catches("integrity_constraint_violation", "23505"));
        assert!(catches("SQLSTATE '23000'", "23503"));
        assert!(catches("sqlstate '22012'", "22012"));
        assert!(catches("OTHERS", "40001"));
        assert!(!catches("others", "P0004"));
        assert!(!catches("others", "57014"));
        assert!(catches("assert_failure", "P0004"));
        assert!(!catches("unique_violation", "23503"));
    }
}
