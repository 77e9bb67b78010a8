//! Expressions and names of schema DDL as PostgreSQL's parser gives them:
//! the columns an expression (DEFAULT, CHECK, GENERATED, an index's WHERE
//! or expression) uses and the functions it calls. The walk knows every
//! node kind such an expression can hold; any other kind is reported, so
//! a call can never hide in a node the walk does not open (fail closed).

use crate::frontend::sql::pg::{protobuf as pb, NodeEnum};

/// A function call in a schema expression.
#[derive(Debug, Clone)]
pub struct Call {
    /// The name as PostgreSQL folded it, schema-qualified parts included.
    pub name: Vec<String>,
    /// Byte offset of the call's name in the schema file.
    pub at: usize,
    pub nargs: usize,
}

/// What a schema expression uses.
#[derive(Debug, Default)]
pub struct ExprUses {
    /// Column names (folded), in order of appearance.
    pub columns: Vec<String>,
    /// Function calls, innermost first (evaluation order).
    pub calls: Vec<Call>,
    /// A subquery (PostgreSQL rejects them in these positions; kept to
    /// report it rather than assume).
    pub subquery: Option<usize>,
    /// A node kind the walk does not know, with a location if it has one.
    pub unknown: Option<(String, Option<usize>)>,
}

fn loc(l: i32) -> Option<usize> {
    usize::try_from(l).ok()
}

/// The text of a `String` node.
pub fn sval(n: &pb::Node) -> Option<&str> {
    match n.node.as_ref() {
        Some(NodeEnum::String(s)) => Some(&s.sval),
        _ => None,
    }
}

/// The names of a list of `String` nodes (a qualified name, a key list).
pub fn names(v: &[pb::Node]) -> Vec<String> {
    v.iter().filter_map(sval).map(str::to_string).collect()
}

impl ExprUses {
    pub fn of(n: &pb::Node) -> ExprUses {
        let mut u = ExprUses::default();
        u.walk(n);
        u
    }

    fn all(&mut self, v: &[pb::Node]) {
        v.iter().for_each(|n| self.walk(n));
    }

    fn opt(&mut self, n: &Option<Box<pb::Node>>) {
        if let Some(n) = n {
            self.walk(n);
        }
    }

    /// Visit every sub-expression (PostgreSQL's `a_expr` grammar).
    pub fn walk(&mut self, n: &pb::Node) {
        let Some(e) = n.node.as_ref() else { return };
        match e {
            NodeEnum::ColumnRef(c) => {
                if let Some(last) = c.fields.last().and_then(sval) {
                    self.columns.push(last.to_string());
                }
            }
            NodeEnum::AConst(_)
            | NodeEnum::ParamRef(_)
            | NodeEnum::SqlvalueFunction(_)
            | NodeEnum::SetToDefault(_)
            | NodeEnum::String(_)
            | NodeEnum::Integer(_)
            | NodeEnum::Float(_)
            | NodeEnum::Boolean(_)
            | NodeEnum::BitString(_)
            | NodeEnum::AStar(_) => {}
            NodeEnum::TypeCast(t) => self.opt(&t.arg),
            NodeEnum::AExpr(a) => {
                self.opt(&a.lexpr);
                self.opt(&a.rexpr);
            }
            NodeEnum::BoolExpr(b) => self.all(&b.args),
            NodeEnum::FuncCall(f) => {
                // Arguments first: PostgreSQL evaluates `f(g(a))`'s g
                // before f, and the calls' reads follow this order.
                self.all(&f.args);
                self.all(&f.agg_order);
                self.opt(&f.agg_filter);
                self.calls.push(Call {
                    name: names(&f.funcname),
                    at: loc(f.location).unwrap_or(0),
                    nargs: f.args.len(),
                });
            }
            NodeEnum::NamedArgExpr(a) => self.opt(&a.arg),
            NodeEnum::NullTest(t) => self.opt(&t.arg),
            NodeEnum::BooleanTest(t) => self.opt(&t.arg),
            NodeEnum::CaseExpr(c) => {
                self.opt(&c.arg);
                self.all(&c.args);
                self.opt(&c.defresult);
            }
            NodeEnum::CaseWhen(w) => {
                self.opt(&w.expr);
                self.opt(&w.result);
            }
            NodeEnum::CoalesceExpr(c) => self.all(&c.args),
            NodeEnum::MinMaxExpr(m) => self.all(&m.args),
            NodeEnum::AArrayExpr(a) => self.all(&a.elements),
            NodeEnum::RowExpr(r) => self.all(&r.args),
            NodeEnum::AIndirection(i) => {
                self.opt(&i.arg);
                self.all(&i.indirection);
            }
            NodeEnum::AIndices(i) => {
                self.opt(&i.lidx);
                self.opt(&i.uidx);
            }
            NodeEnum::CollateClause(c) => self.opt(&c.arg),
            NodeEnum::List(l) => self.all(&l.items),
            NodeEnum::SortBy(s) => self.opt(&s.node),
            NodeEnum::SubLink(s) => {
                self.subquery = self.subquery.or(loc(s.location));
            }
            other => {
                if self.unknown.is_none() {
                    let kind = format!("{other:?}");
                    let kind = kind.split('(').next().unwrap_or("?").to_string();
                    self.unknown = Some((kind, None));
                }
            }
        }
    }
}

/// The identifier as written at byte `at` of `text` (the last part of a
/// qualified name, quotes removed), for keeping the user's spelling of
/// names PostgreSQL folds to lower case.
pub fn written_name(text: &str, at: usize) -> Option<String> {
    let b = text.as_bytes();
    let mut i = at;
    let mut last = None;
    loop {
        if b.get(i) == Some(&b'"') {
            let mut s = String::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return last,
                    Some(b'"') if b.get(i + 1) == Some(&b'"') => {
                        s.push('"');
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(_) => {
                        let c = text[i..].chars().next()?;
                        s.push(c);
                        i += c.len_utf8();
                    }
                }
            }
            last = Some(s);
        } else {
            let start = i;
            while let Some(c) = text.get(i..).and_then(|t| t.chars().next()) {
                if c.is_alphanumeric() || c == '_' || c == '$' {
                    i += c.len_utf8();
                } else {
                    break;
                }
            }
            if i == start {
                return last;
            }
            last = Some(text[start..i].to_string());
        }
        let mut j = i;
        while b.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        if b.get(j) != Some(&b'.') {
            return last;
        }
        j += 1;
        while b.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        i = j;
    }
}

/// The first offset at or after `at` that is not blank or a comment.
pub fn skip_blank(text: &str, mut at: usize) -> usize {
    let b = text.as_bytes();
    loop {
        while b.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        if text[at.min(text.len())..].starts_with("--") {
            at = text[at..].find('\n').map_or(text.len(), |k| at + k);
        } else if text[at.min(text.len())..].starts_with("/*") {
            at = text[at..].find("*/").map_or(text.len(), |k| at + k + 2);
        } else {
            return at.min(text.len());
        }
    }
}
