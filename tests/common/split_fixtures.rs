//! The split-schedule fixtures (write skew, Fekete's read-only anomaly,
//! the four-transaction hub shape of tests/explorer_k4.rs) that the
//! explorer tests search and tests/replay_split.rs runs on PostgreSQL: one
//! text for both, so what is replayed is what was found.
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
/// tests/explorer_k4.rs: an anomaly that needs P twice (reasoning there).
pub const HUB: &str = "CREATE TABLE hub (id int PRIMARY KEY, n int NOT NULL);
CREATE TABLE slot (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE acct (id int PRIMARY KEY, b int NOT NULL);
";
pub const HUB_P: &str = "SELECT n INTO :n FROM hub WHERE id = 1 FOR UPDATE;
UPDATE hub SET n = :n + 1 WHERE id = 1;
UPDATE slot SET v = :n WHERE id = :k;
COMMIT;
";
pub const HUB_Q: &str = "SELECT v INTO :x FROM slot WHERE id = 1;
UPDATE acct SET b = b + 1 WHERE id = 2;
COMMIT;
";
pub const HUB_R: &str = "SELECT b INTO :y FROM acct WHERE id = :k;
SELECT v INTO :z FROM slot WHERE id = :k;
COMMIT;
";
