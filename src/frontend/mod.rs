//! The front-end: SQL programs, PL/pgSQL-free procedural SQL and schema
//! DDL → BTPs (Section 5). `sql` parses (the procedural layer by hand,
//! every statement and expression by sqlparser) and knows nothing about
//! BTPs; `lower` turns the parsed programs into BTPs with their
//! constraints and knows nothing about files beyond the ones it is given.

pub mod lower;
pub mod sql;
pub mod sql_dir;
