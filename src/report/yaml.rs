//! BTP YAML out: a small hand-written emitter so that statements come out
//! one per line in flow style, the way a person would write them; what it
//! writes `frontend::yaml::parse` reads back unchanged.

use crate::model::btp::{Body, Held, Program, Statement, Workload};

/// YAML scalar: plain when unambiguous, JSON-quoted (valid YAML) otherwise.
fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ' ' || c == '.' || c == '#')
        && !s.ends_with(' ')
        && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"]
            .contains(&s.to_lowercase().as_str());
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
    }
}

fn list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let v: Vec<String> = items.into_iter().map(scalar).collect();
    format!("[{}]", v.join(", "))
}

fn body_text(p: &Program, b: &Body) -> String {
    match b {
        Body::Stmt(i) => scalar(&p.statements[*i].id),
        Body::Seq(v) => format!(
            "[{}]",
            v.iter()
                .map(|b| body_text(p, b))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Body::Branch(v) => format!(
            "{{branch: [{}]}}",
            v.iter()
                .map(|b| body_text(p, b))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Body::Opt(b) => format!("{{opt: {}}}", body_text(p, b)),
        Body::Loop(b) => format!("{{loop: {}}}", body_text(p, b)),
    }
}

/// Emit a workload as BTP YAML that `frontend::yaml::parse` reads back unchanged.
pub fn to_yaml(w: &Workload) -> String {
    let mut o = String::new();
    o.push_str("# isolint BTP workload (format: docs/btp-format.md)\n");
    o.push_str(&format!("name: {}\n", scalar(&w.name)));
    if let Some(d) = &w.description {
        o.push_str(&format!("description: {}\n", scalar(d)));
    }
    schema_yaml(w, &mut o);
    o.push_str("programs:\n");
    for p in &w.programs {
        o.push_str(&format!("  - name: {}\n", scalar(&p.name)));
        if let Some(a) = &p.abbrev {
            o.push_str(&format!("    abbrev: {}\n", scalar(a)));
        }
        if let Some(f) = &p.file {
            o.push_str(&format!("    file: {}\n", scalar(f)));
        }
        o.push_str("    statements:\n");
        for s in &p.statements {
            let fields = statement_fields(w, s);
            o.push_str(&format!("      - {{ {} }}\n", fields.join(", ")));
        }
        o.push_str(&format!("    body: {}\n", body_text(p, &p.body)));
        if !p.constraints.is_empty() {
            let cs: Vec<String> = p
                .constraints
                .iter()
                .map(|c| serde_json::to_string(&w.constraint_text(p, c)).unwrap_or_default())
                .collect();
            o.push_str(&format!("    constraints: [{}]\n", cs.join(", ")));
        }
    }
    o
}

/// The `schema:` section: relations, then foreign keys.
fn schema_yaml(w: &Workload, o: &mut String) {
    o.push_str("schema:\n  relations:\n");
    for r in &w.schema.relations {
        let mut fields = vec![format!(
            "attributes: {}",
            list(r.attributes.iter().map(String::as_str))
        )];
        if !r.primary_key.is_empty() {
            fields.push(format!(
                "key: {}",
                list(r.primary_key.iter().map(|&i| r.attributes[i].as_str()))
            ));
        }
        if !r.unique_keys.is_empty() {
            let u: Vec<String> = r
                .unique_keys
                .iter()
                .map(|k| list(k.iter().map(|&i| r.attributes[i].as_str())))
                .collect();
            fields.push(format!("unique: [{}]", u.join(", ")));
        }
        o.push_str(&format!(
            "    {}: {{ {} }}\n",
            scalar(&r.name),
            fields.join(", ")
        ));
    }
    if !w.schema.foreign_keys.is_empty() {
        o.push_str("  foreign_keys:\n");
        for f in &w.schema.foreign_keys {
            let (d, r) = (w.schema.rel(f.domain), w.schema.rel(f.range));
            let mut fields = vec![
                format!("from: {}", scalar(&d.name)),
                format!("to: {}", scalar(&r.name)),
            ];
            if !f.columns.is_empty() {
                let cols: Vec<String> = f
                    .columns
                    .iter()
                    .map(|(a, b)| {
                        format!(
                            "{}: {}",
                            scalar(&d.attributes[*a]),
                            scalar(&r.attributes[*b])
                        )
                    })
                    .collect();
                fields.push(format!("columns: {{ {} }}", cols.join(", ")));
            }
            o.push_str(&format!(
                "    {}: {{ {} }}\n",
                scalar(&f.name),
                fields.join(", ")
            ));
        }
    }
}

/// One statement's flow-mapping fields, in docs/btp-format.md's order.
fn statement_fields(w: &Workload, s: &Statement) -> Vec<String> {
    let rel = w.schema.rel(s.rel);
    let mut fields = vec![
        format!("id: {}", scalar(&s.id)),
        format!("type: {}", s.ty),
        format!("rel: {}", scalar(&rel.name)),
    ];
    for (name, set) in [("pread", &s.pread), ("read", &s.read), ("write", &s.write)] {
        if let Some(set) = set {
            let names = rel.names(set);
            fields.push(format!(
                "{name}: {}",
                list(names.iter().map(String::as_str))
            ));
        }
    }
    if s.locking {
        fields.push("lock: true".to_string());
    }
    match s.held {
        Some(Held::KeyShare) => fields.push("key_share: true".to_string()),
        Some(Held::Children(f)) => fields.push(format!(
            "checks_children_of: {}",
            scalar(&w.schema.foreign_keys[f].name)
        )),
        Some(Held::OwnInserts) => fields.push("own_inserts: true".to_string()),
        None => {}
    }
    if let Some(sql) = &s.sql {
        fields.push(format!(
            "sql: {}",
            serde_json::to_string(sql).unwrap_or_default()
        ));
    }
    if let Some(origin) = &s.origin {
        fields.push(format!(
            "origin: {}",
            serde_json::to_string(&format!("{}:{}", origin.file, origin.line)).unwrap_or_default()
        ));
    }
    fields
}
