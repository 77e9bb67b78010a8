//! Values as PostgreSQL's text form: what the executor binds to `:name`
//! parameters and `INTO` variables, what it reads back and compares.
//!
//! Why text: a program's variables take whatever type their column has
//! (NUMERIC, VARCHAR, DATE, …) and the crate has no Rust type for most of
//! them without extra features. Parameters are sent in the text format
//! with the type of the column they came from (PostgreSQL parses them as
//! its own input functions do); results arrive in the binary format, which
//! [`Val`]'s `FromSql` turns back into the text PostgreSQL would print for
//! the common types. Two values are equal when their texts are, which is
//! what comparing a replay with a serial run needs.
//!
//! Also the value makers: a column's type as the catalog describes it
//! ([`Column`], [`Shape`]) and made-up values that fit it ([`made_up`],
//! [`fit_number`], [`fit_text`]), used by the scratch schema, witness and
//! random replay alike.

use std::error::Error;
use std::fmt;

// `BytesMut` as the `ToSql` trait names it (the crate re-exports it).
use postgres::types::private::BytesMut;
use postgres::types::{to_sql_checked, Format, FromSql, IsNull, Kind, ToSql, Type};

type BoxError = Box<dyn Error + Sync + Send>;

/// A value in PostgreSQL's text form (`None` = NULL), with the type it has
/// (`oid` 0: not known, PostgreSQL infers it from the context).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Val {
    pub text: Option<String>,
    pub oid: u32,
}

impl Val {
    pub fn null() -> Val {
        Val { text: None, oid: 0 }
    }

    /// A value of unknown type (a literal, a chosen parameter).
    pub fn untyped(text: impl Into<String>) -> Val {
        Val {
            text: Some(text.into()),
            oid: 0,
        }
    }

    pub fn typed(text: impl Into<String>, ty: &Type) -> Val {
        Val {
            text: Some(text.into()),
            oid: ty.oid(),
        }
    }

    pub fn boolean(b: bool) -> Val {
        Val::typed(if b { "t" } else { "f" }, &Type::BOOL)
    }

    /// The type to declare for this value as a query parameter. A type
    /// the workload's DDL created (an enum, a domain, a composite or an
    /// array of one) keeps its oid: every value comes from the one scratch
    /// schema the replay runs in, and sent as "unknown" a composite array
    /// leaves `unnest($1)` ambiguous (graphile-worker's `add_jobs`).
    pub fn param_type(&self) -> Type {
        Type::from_oid(self.oid).unwrap_or_else(|| {
            Type::new(
                format!("oid {}", self.oid),
                self.oid,
                Kind::Simple,
                String::new(),
            )
        })
    }

    /// True for PostgreSQL's `t` (what a boolean condition returns).
    pub fn is_true(&self) -> bool {
        self.text.as_deref() == Some("t")
    }

    /// A SQL literal for this value (for messages and the seed listing).
    pub fn literal(&self) -> String {
        match &self.text {
            None => "NULL".into(),
            Some(t) if is_number(self.oid) => t.clone(),
            Some(t) => format!("'{}'", t.replace('\'', "''")),
        }
    }
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.literal())
    }
}

/// PostgreSQL's character types.
pub fn is_text(oid: u32) -> bool {
    [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME]
        .iter()
        .any(|t| t.oid() == oid)
}

/// PostgreSQL's number types (OID too: it prints as one).
pub fn is_number(oid: u32) -> bool {
    [
        Type::INT2,
        Type::INT4,
        Type::INT8,
        Type::NUMERIC,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::OID,
    ]
    .iter()
    .any(|t| t.oid() == oid)
}

impl ToSql for Val {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match &self.text {
            None => Ok(IsNull::Yes),
            Some(t) => {
                out.extend_from_slice(t.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    // Every type has a text input function: PostgreSQL parses the text.
    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Val {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Val, BoxError> {
        Ok(Val {
            text: Some(decode(ty, raw)?),
            oid: ty.oid(),
        })
    }

    fn from_sql_null(ty: &Type) -> Result<Val, BoxError> {
        Ok(Val {
            text: None,
            oid: ty.oid(),
        })
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

fn be<const N: usize>(raw: &[u8]) -> Result<[u8; N], BoxError> {
    raw.get(..N)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| "short binary value".into())
}

/// PostgreSQL's binary format → its text output, for the types programs
/// commonly use; others are an error naming the type.
fn decode(ty: &Type, raw: &[u8]) -> Result<String, BoxError> {
    match ty.kind() {
        Kind::Enum(_) => return Ok(String::from_utf8_lossy(raw).into_owned()),
        Kind::Domain(base) => return decode(base, raw),
        Kind::Array(member) => return array(member, raw),
        Kind::Composite(fields) => {
            let types: Vec<&Type> = fields.iter().map(|f| f.type_()).collect();
            return composite(&types, raw);
        }
        _ => {}
    }
    Ok(match *ty {
        Type::BOOL => if raw.first() == Some(&1) { "t" } else { "f" }.into(),
        Type::INT2 => i16::from_be_bytes(be(raw)?).to_string(),
        Type::INT4 => i32::from_be_bytes(be(raw)?).to_string(),
        Type::INT8 => i64::from_be_bytes(be(raw)?).to_string(),
        Type::OID => u32::from_be_bytes(be(raw)?).to_string(),
        Type::FLOAT4 => f32::from_be_bytes(be(raw)?).to_string(),
        Type::FLOAT8 => f64::from_be_bytes(be(raw)?).to_string(),
        Type::NUMERIC => numeric(raw)?,
        // PERFORM of a function returning void (`pg_notify`).
        Type::VOID => String::new(),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON => {
            String::from_utf8_lossy(raw).into_owned()
        }
        Type::JSONB => String::from_utf8_lossy(raw.get(1..).unwrap_or_default()).into_owned(),
        Type::DATE => date(i32::from_be_bytes(be(raw)?) as i64),
        Type::TIME => {
            // Microseconds since midnight, printed as PostgreSQL does.
            let us = i64::from_be_bytes(be(raw)?);
            let (s, frac) = (us / 1_000_000, us % 1_000_000);
            let mut t = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
            if frac != 0 {
                t.push_str(format!(".{frac:06}").trim_end_matches('0'));
            }
            t
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let us = i64::from_be_bytes(be(raw)?);
            let (days, rem) = (us.div_euclid(86_400_000_000), us.rem_euclid(86_400_000_000));
            let s = rem / 1_000_000;
            let frac = rem % 1_000_000;
            let mut t = format!(
                "{} {:02}:{:02}:{:02}",
                date(days),
                s / 3600,
                s / 60 % 60,
                s % 60
            );
            if frac != 0 {
                t.push_str(format!(".{frac:06}").trim_end_matches('0'));
            }
            if *ty == Type::TIMESTAMPTZ {
                t.push_str("+00");
            }
            t
        }
        Type::UUID => {
            let h: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            if h.len() != 32 {
                return Err("bad uuid".into());
            }
            format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            )
        }
        _ => return Err(format!("isolint replay cannot read values of type {}", ty.name()).into()),
    })
}

/// A length-prefixed value at `*at` (length −1: NULL), decoded as `ty`.
fn field(ty: &Type, raw: &[u8], at: &mut usize) -> Result<Option<String>, BoxError> {
    let len = i32::from_be_bytes(be(raw.get(*at..).unwrap_or_default())?);
    *at += 4;
    if len < 0 {
        return Ok(None);
    }
    let end = *at + len as usize;
    let bytes = raw.get(*at..end).ok_or("short binary value")?;
    *at = end;
    decode(ty, bytes).map(Some)
}

/// An array's binary form (array_send) → array_out's text: `{a,"b c",NULL}`,
/// nested braces per dimension, `[lb:ub]=` when a lower bound is not 1.
fn array(member: &Type, raw: &[u8]) -> Result<String, BoxError> {
    let int = |i: usize| -> Result<i32, BoxError> {
        Ok(i32::from_be_bytes(be(raw.get(i..).unwrap_or_default())?))
    };
    let ndim = int(0)?.max(0) as usize;
    if ndim == 0 {
        return Ok("{}".into());
    }
    let dims: Vec<(i32, i32)> = (0..ndim)
        .map(|d| Ok((int(12 + 8 * d)?, int(16 + 8 * d)?)))
        .collect::<Result<_, BoxError>>()?;
    let mut at = 12 + 8 * ndim;
    let mut elems = vec![];
    let total: i64 = dims.iter().map(|(n, _)| i64::from(*n).max(0)).product();
    for _ in 0..total {
        elems.push(match field(member, raw, &mut at)? {
            None => "NULL".to_string(),
            Some(t) => quoted_element(&t),
        });
    }
    // Nest from the innermost dimension out.
    for &(n, _) in dims.iter().rev() {
        let n = (n.max(1)) as usize;
        elems = elems
            .chunks(n)
            .map(|c| format!("{{{}}}", c.join(",")))
            .collect();
    }
    let mut out = elems.concat();
    if dims.iter().any(|(_, lb)| *lb != 1) {
        let bounds: String = dims
            .iter()
            .map(|(n, lb)| format!("[{lb}:{}]", lb + n - 1))
            .collect();
        out = format!("{bounds}={out}");
    }
    Ok(out)
}

/// array_out's quoting of one element.
fn quoted_element(t: &str) -> String {
    let needs = t.is_empty()
        || t.eq_ignore_ascii_case("NULL")
        || t.chars()
            .any(|c| matches!(c, '"' | '\\' | '{' | '}' | ',') || c.is_whitespace());
    if !needs {
        return t.to_string();
    }
    let esc: String = t
        .chars()
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            _ => vec![c],
        })
        .collect();
    format!("\"{esc}\"")
}

/// A composite's binary form (record_send) → record_out's text:
/// `(1,"a b",)` (a NULL field is empty).
fn composite(types: &[&Type], raw: &[u8]) -> Result<String, BoxError> {
    let n = i32::from_be_bytes(be(raw)?).max(0) as usize;
    let mut at = 4;
    let mut out = vec![];
    for i in 0..n {
        let oid = u32::from_be_bytes(be(raw.get(at..).unwrap_or_default())?);
        at += 4;
        let ty = match (types.get(i), Type::from_oid(oid)) {
            (Some(t), _) => (*t).clone(),
            (None, Some(t)) => t,
            (None, None) => return Err(format!("a record field of type oid {oid}").into()),
        };
        out.push(match field(&ty, raw, &mut at)? {
            None => String::new(),
            Some(t) => {
                let needs = t.is_empty()
                    || t.chars()
                        .any(|c| matches!(c, '"' | '\\' | '(' | ')' | ',') || c.is_whitespace());
                if needs {
                    format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\"\""))
                } else {
                    t
                }
            }
        });
    }
    Ok(format!("({})", out.join(",")))
}

/// NUMERIC's binary form (ndigits, weight, sign, dscale, base-10000
/// digits) → its text output with `dscale` decimals.
fn numeric(raw: &[u8]) -> Result<String, BoxError> {
    let word = |i: usize| -> Result<u16, BoxError> {
        Ok(u16::from_be_bytes(be(&raw[i.min(raw.len())..])?))
    };
    let ndigits = word(0)? as i64;
    let weight = word(2)? as i16 as i64;
    let sign = word(4)?;
    let dscale = word(6)? as usize;
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        _ => {}
    }
    let digit = |i: i64| -> Result<u16, BoxError> {
        if i < 0 || i >= ndigits {
            Ok(0)
        } else {
            word(8 + 2 * i as usize)
        }
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            let d = digit(i)?;
            if i == 0 {
                s.push_str(&d.to_string());
            } else {
                s.push_str(&format!("{d:04}"));
            }
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut i = weight + 1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(i)?));
            i += 1;
        }
        frac.truncate(dscale);
        s.push('.');
        s.push_str(&frac);
    }
    Ok(s)
}

/// Days since 2000-01-01 → `YYYY-MM-DD` (proleptic Gregorian, H. Hinnant's
/// civil_from_days).
fn date(days_since_2000: i64) -> String {
    let z = days_since_2000 + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A column (or a parameter) with its type as the catalog describes it:
/// what made-up values must fit.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub oid: u32,
    pub type_name: String,
    pub not_null: bool,
    pub has_default: bool,
    /// `GENERATED ALWAYS AS (…) STORED`: PostgreSQL computes it and
    /// refuses a value for it.
    pub generated: bool,
    /// `GENERATED ALWAYS AS IDENTITY`: a value for it needs `OVERRIDING
    /// SYSTEM VALUE`.
    pub identity_always: bool,
    pub shape: Shape,
}

/// What values of a column's type look like, from the catalog: a domain's
/// base type (the type itself otherwise), an array's element type, an
/// enum's labels.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// The base type (the column's own type unless it is a domain).
    pub base: u32,
    /// `format_type` of it, with the domain's or column's modifier.
    pub base_name: String,
    /// For an array: its element type (0 otherwise).
    pub elem: u32,
    pub elem_name: String,
    /// For an enum (or an array of one): its labels in order.
    pub labels: Vec<String>,
    /// For a domain with CHECK constraints: values PostgreSQL accepts for
    /// it ([`Scratch::solve_domains`]); made-up values are taken from here.
    pub accepted: Vec<String>,
}

impl Column {
    /// A column of type `ty` that is no table's (a parameter's type).
    pub fn of_type(name: &str, oid: u32, type_name: &str) -> Column {
        Column {
            name: name.to_string(),
            oid,
            type_name: type_name.to_string(),
            not_null: false,
            has_default: false,
            generated: false,
            identity_always: false,
            shape: Shape {
                base: oid,
                base_name: type_name.to_string(),
                ..Shape::default()
            },
        }
    }
}

/// Value number `n` of column `col`'s type as PostgreSQL's text input,
/// within the type: an enum's labels in turn, a domain's base type, an
/// array of one element, numbers within `smallint`/`integer`/`numeric(p,
/// s)`, strings within `char(n)`/`varchar(n)`, jsonb, uuid, time,
/// interval. `None` for a type isolint does not know. A domain with a
/// CHECK takes the values the server accepted for it
/// (`Scratch::solve_domains`).
pub(crate) fn made_up(col: &Column, n: u64) -> Option<String> {
    let sh = &col.shape;
    let (base, base_name) = if sh.base != 0 {
        (sh.base, sh.base_name.as_str())
    } else {
        (col.oid, col.type_name.as_str())
    };
    if sh.elem != 0 {
        let elem = Column::of_type(&col.name, sh.elem, &sh.elem_name);
        let elem = Column {
            shape: Shape {
                labels: sh.labels.clone(),
                ..elem.shape.clone()
            },
            ..elem
        };
        let v = made_up(&elem, n)?;
        return Some(format!(
            "{{\"{}\"}}",
            v.replace('\\', "\\\\").replace('"', "\\\"")
        ));
    }
    if !sh.accepted.is_empty() {
        return Some(sh.accepted[n as usize % sh.accepted.len()].clone());
    }
    if !sh.labels.is_empty() {
        return Some(sh.labels[n as usize % sh.labels.len()].clone());
    }
    let t = Type::from_oid(base)?;
    Some(match t {
        _ if is_number(base) => fit_number(n, base_name),
        _ if is_text(base) => fit_text(n, base_name),
        Type::BOOL => "t".into(),
        Type::DATE => format!("2001-01-{:02}", n % 28 + 1),
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            format!("2001-01-{:02} 00:00:{:02}", n % 28 + 1, n % 60)
        }
        Type::TIME | Type::TIMETZ => format!("00:{:02}:{:02}", n / 60 % 60, n % 60),
        Type::INTERVAL => format!("{n} seconds"),
        Type::UUID => format!("00000000-0000-4000-8000-{:012x}", n),
        Type::JSON | Type::JSONB => format!("{{\"isolint\": {n}}}"),
        Type::BYTEA => format!("\\x{n:016x}"),
        _ => return None,
    })
}

/// The `(a[, b])` of a type name like `numeric(4,4)` or `character(2)`.
fn type_args(type_name: &str) -> Vec<u32> {
    type_name
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(a, _)| a.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// `n` as a number that fits `numeric(p, s)`: at most p − s integer
/// digits (a pure fraction when that is 0), and `smallint`/`integer`
/// within their range (PostgreSQL refused the random replay's key
/// 1000002 for a smallint), so seeding never overflows. Distinct for n
/// below the type's range.
pub(crate) fn fit_number(n: u64, type_name: &str) -> String {
    match type_name {
        "smallint" => return (n % i16::MAX as u64).to_string(),
        "integer" => return (n % i32::MAX as u64).to_string(),
        _ => {}
    }
    match type_args(type_name).as_slice() {
        [p, s] if p <= s => {
            let s = (*s).min(18);
            format!("0.{:0w$}", n % 10u64.pow(s), w = s as usize)
        }
        [p, s] => (n % 10u64.pow((p - s).min(18))).to_string(),
        _ => n.to_string(),
    }
}

/// `v<n>`, or `n` in base 36 when that does not fit `char(k)` /
/// `varchar(k)`.
pub(crate) fn fit_text(n: u64, type_name: &str) -> String {
    let v = format!("v{n}");
    match type_args(type_name).first() {
        Some(&k) if (k as usize) < v.len() => {
            let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
            let mut out = vec![];
            let mut m = n;
            for _ in 0..k {
                out.push(digits[(m % 36) as usize]);
                m /= 36;
            }
            out.reverse();
            String::from_utf8(out).unwrap_or(v)
        }
        _ => v,
    }
}

#[cfg(test)]
mod tests {
    use super::{date, numeric};

    fn num(words: &[u16]) -> String {
        let raw: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        numeric(&raw).unwrap_or_default()
    }

    /// Worked by hand from PostgreSQL's numeric.c layout: 12345.67 is the
    /// base-10000 digits 1, 2345, 6700 with weight 1 and dscale 2.
    #[test]
    fn numeric_text() {
        assert_eq!(num(&[3, 1, 0, 2, 1, 2345, 6700]), "12345.67");
        assert_eq!(num(&[1, 0, 0x4000, 0, 7]), "-7");
        assert_eq!(num(&[0, 0, 0, 2]), "0.00");
        // 0.0005: one digit 5 at weight -1 (0.0005 = 5 × 10000^-1).
        assert_eq!(num(&[1, 0xFFFF, 0, 4, 5]), "0.0005");
        // 100: one digit 100 at weight 0.
        assert_eq!(num(&[1, 0, 0, 0, 100]), "100");
    }

    /// PostgreSQL 15 prints `'13:04:05.25'::time` as 13:04:05.25 and
    /// `'00:00:15'::time` as 00:00:15 (checked with psql).
    #[test]
    fn times() {
        use postgres::types::Type;
        let t = |us: i64| super::decode(&Type::TIME, &us.to_be_bytes()).unwrap_or_default();
        assert_eq!(t(47_045_250_000), "13:04:05.25");
        assert_eq!(t(15_000_000), "00:00:15");
    }

    #[test]
    fn dates() {
        assert_eq!(date(0), "2000-01-01");
        assert_eq!(date(59), "2000-02-29");
        assert_eq!(date(-1), "1999-12-31");
        assert_eq!(date(366), "2001-01-01");
    }
}
