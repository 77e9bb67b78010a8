//! The split-schedule fixtures (write skew, Fekete's read-only anomaly)
//! that tests/explorer_split.rs searches and tests/replay_split.rs runs on
//! PostgreSQL: one text for both, so what is replayed is what was found.
#![allow(dead_code)]

pub const DOCTORS: &str =
    "CREATE TABLE doctor (id int PRIMARY KEY, shift int NOT NULL, oncall boolean NOT NULL);\n";
pub const LEAVE: &str = "SELECT oncall INTO :a FROM doctor WHERE id = :me;
SELECT oncall INTO :b FROM doctor WHERE id = :other;
UPDATE doctor SET oncall = false WHERE id = :me;
COMMIT;
";
pub const BANK: &str = "CREATE TABLE checking (id int PRIMARY KEY, bal int NOT NULL);
CREATE TABLE savings (id int PRIMARY KEY, bal int NOT NULL);
";
pub const WITHDRAW: &str = "SELECT bal INTO :x FROM checking WHERE id = :c;
SELECT bal INTO :y FROM savings WHERE id = :c;
UPDATE checking SET bal = bal - :amt WHERE id = :c;
COMMIT;
";
pub const DEPOSIT: &str = "UPDATE savings SET bal = bal + :amt WHERE id = :c;
COMMIT;
";
pub const REPORT: &str = "SELECT bal INTO :x FROM checking WHERE id = :c;
SELECT bal INTO :y FROM savings WHERE id = :c;
COMMIT;
";
