//! One diagnostic type for every kind of bad input.
//!
//! Everything a user can get wrong (a YAML file, a SQL program, a schema, a
//! command-line value) ends up as a [`Diag`]: a one-paragraph message, the
//! file with a labelled span when we know where the problem is, and a hint.
//! `main` renders it with miette and exits with code 2.

use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};

/// A user-facing error with optional source location and hint.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{message}")]
pub struct Diag {
    pub message: String,
    #[help]
    pub help: Option<String>,
    #[source_code]
    pub src: Option<NamedSource<Arc<str>>>,
    #[label("{label}")]
    pub span: Option<SourceSpan>,
    pub label: String,
    /// `file:line:column` of the span, kept so plain-text consumers (tests,
    /// JSON, CI logs) get the location without rendering the snippet.
    pub location: Option<String>,
    /// The other errors of the same run ([`Errors`]), each rendered in
    /// full after this one.
    #[related]
    pub related: Vec<Diag>,
    /// With `related`: this diagnostic only counts the errors of a run,
    /// and this many more were found beyond [`MAX_ERRORS`].
    pub omitted: usize,
}

pub type Result<T> = std::result::Result<T, Box<Diag>>;

impl Diag {
    pub fn new(message: impl Into<String>) -> Box<Diag> {
        Box::new(Diag {
            message: message.into(),
            help: None,
            src: None,
            span: None,
            label: String::new(),
            location: None,
            related: vec![],
            omitted: 0,
        })
    }

    pub fn help(mut self: Box<Self>, help: impl Into<String>) -> Box<Diag> {
        self.help = Some(help.into());
        self
    }

    /// Attach a source file and the byte range the error is about. The
    /// message is prefixed with `file:line:col` so the location survives
    /// any renderer.
    pub fn at(
        mut self: Box<Self>,
        file: &SourceFile,
        offset: usize,
        len: usize,
        label: impl Into<String>,
    ) -> Box<Diag> {
        // Spans must start and end on character boundaries (miette slices)
        // of the text shown (a shadow has the same length, and a boundary
        // of the user's text is one of the shadow's).
        let shown = file.shown.as_ref().unwrap_or(&file.text);
        let mut offset = offset.min(shown.len());
        while !shown.is_char_boundary(offset) {
            offset -= 1;
        }
        let mut end = (offset + len).min(shown.len());
        while !shown.is_char_boundary(end) {
            end += 1;
        }
        let len = end - offset;
        let (line, col) = file.line_col(offset);
        let loc = format!("{}:{}:{}", file.name, line, col);
        self.message = format!("{loc}: {}", self.message);
        self.location = Some(loc);
        self.src = Some(NamedSource::new(file.name.clone(), shown.clone()));
        self.span = Some((offset, len).into());
        self.label = label.into();
        self
    }

    /// Like [`Diag::at`] but from a 1-based line and column.
    pub fn at_line_col(
        self: Box<Self>,
        file: &SourceFile,
        line: usize,
        col: usize,
        label: impl Into<String>,
    ) -> Box<Diag> {
        let offset = file.offset_of(line, col);
        let len = file.text[offset..]
            .find(|c: char| c.is_whitespace())
            .unwrap_or(file.text.len() - offset)
            .max(1);
        self.at(file, offset, len, label)
    }
}

/// How many errors one run reports at most.
pub const MAX_ERRORS: usize = 50;

/// The errors of a run, gathered so one run shows all of them (up to
/// [`MAX_ERRORS`]) instead of stopping at the first: a loader goes on
/// with the next file, routine or transaction after an error.
#[derive(Debug, Default)]
pub struct Errors {
    list: Vec<Diag>,
    /// Errors beyond the limit: counted, not kept.
    dropped: usize,
}

impl Errors {
    /// Keep `d` (the errors a combined diagnostic holds, one by one).
    pub fn push(&mut self, d: Box<Diag>) {
        let mut d = *d;
        let related = std::mem::take(&mut d.related);
        let errors: Vec<Diag> = if related.is_empty() {
            vec![d]
        } else {
            self.dropped += d.omitted;
            related
        };
        for e in errors {
            if self.list.len() < MAX_ERRORS {
                self.list.push(e);
            } else {
                self.dropped += 1;
            }
        }
    }

    /// The value of `r`, or `None` with its error kept.
    pub fn take<T>(&mut self, r: Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(d) => {
                self.push(d);
                None
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn len(&self) -> usize {
        self.list.len() + self.dropped
    }

    /// The messages kept so far.
    pub fn messages(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|d| d.message.as_str())
    }

    /// `Ok` with no error; the error itself if there is one; otherwise one
    /// diagnostic that counts them and holds each as related.
    pub fn finish(mut self) -> Result<()> {
        if self.list.len() <= 1 && self.dropped == 0 {
            return match self.list.pop() {
                Some(d) => Err(Box::new(d)),
                None => Ok(()),
            };
        }
        // In file order, as a reader fixes them (unlocated ones first).
        self.list.sort_by_cached_key(|d| {
            let file = d.src.as_ref().map(|s| s.name().to_string());
            (file, d.span.map(|s| s.offset()))
        });
        let shown = self.list.len();
        let total = shown + self.dropped;
        let mut d = Diag::new(if self.dropped > 0 {
            format!("{total} errors; the first {shown} follow")
        } else {
            format!("{total} errors")
        })
        .help(format!(
            "isolint reports every error of a run, up to {MAX_ERRORS}; fix them and run again"
        ));
        d.related = self.list;
        d.omitted = self.dropped;
        Err(d)
    }
}

/// Something the front-end could not model precisely and over-approximated
/// (soundly), or a note about how it modelled a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: warning: {}", self.file, self.line, self.message)
    }
}

/// A named text loaded from disk (or given in memory), used for spans.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: Arc<str>,
    /// The text diagnostics display when `text` is isolint's working copy
    /// of the user's file (a routine file's shadow: same length and lines,
    /// text outside the bodies blanked): the user's own lines are shown,
    /// never isolint's rewriting of them.
    pub shown: Option<Arc<str>>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> SourceFile {
        SourceFile {
            name: name.into(),
            text: text.into(),
            shown: None,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        // Columns count the characters the user sees (`shown`).
        let text = self.shown.as_ref().unwrap_or(&self.text);
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() + 1;
        (line, col)
    }

    /// Byte offset of a 1-based line and column; clamps to the text.
    pub fn offset_of(&self, line: usize, col: usize) -> usize {
        let mut offset = 0;
        let text = self.shown.as_ref().unwrap_or(&self.text);
        for (i, l) in text.split_inclusive('\n').enumerate() {
            if i + 1 == line {
                let within: usize = l
                    .chars()
                    .take(col.saturating_sub(1))
                    .map(char::len_utf8)
                    .sum();
                return offset + within;
            }
            offset += l.len();
        }
        text.len()
    }
}

/// "Did you mean" for a misspelt name: the closest candidate by edit
/// distance, if it is close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let lower = name.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len().max(name.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!("did you mean `{c}`?"))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_round_trips() {
        let f = SourceFile::new("x", "ab\ncdé\nf");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        let off = f.offset_of(2, 3);
        assert_eq!(&f.text[off..off + 2], "é");
        assert_eq!(f.line_col(off), (2, 3));
    }

    #[test]
    fn spans_snap_to_character_boundaries() {
        let f = SourceFile::new("x", "aé b");
        // Byte 2 is inside `é`; a one-byte span there must widen, not panic.
        let d = Diag::new("m").at(&f, 2, 1, "here");
        assert_eq!(d.span, Some((1, 2).into()));
        let rendered = format!("{:?}", miette::Report::new(*d));
        assert!(rendered.contains("x:1:2"), "{rendered}");
    }

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(
            did_you_mean("Custmer", ["Customer", "District"]).as_deref(),
            Some("did you mean `Customer`?")
        );
        assert_eq!(did_you_mean("zzz", ["Customer"]), None);
    }
}
