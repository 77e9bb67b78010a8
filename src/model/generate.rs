//! Workload generators. Auction(n) (Section 7.3): n items, each with its
//! own relation Bids_i and programs FindBids_i and PlaceBid_i as in
//! Figure 2, all sharing Buyer and Log. Auction(1) is the paper's Auction.

use crate::model::btp::{Body, Constraint, ConstraintKind, Program, Statement, StmtType, Workload};
use crate::model::schema::{AttrSet, ForeignKey, Relation, Schema};

/// Auction(n): relations Buyer, Log, Bids1..Bidsn; programs FindBids_i,
/// PlaceBid_i for each item i.
pub fn auction(n: usize) -> Workload {
    let (buyer, log) = (0, 1);
    let mut schema = Schema {
        relations: vec![
            relation("Buyer".into(), &["id", "calls"]),
            relation("Log".into(), &["id", "buyerId", "bid"]),
        ],
        foreign_keys: vec![ForeignKey {
            name: "fLog".into(),
            domain: log,
            range: buyer,
            columns: vec![(1, 0)],
        }],
    };
    let mut programs = vec![];
    for i in 1..=n {
        let bids = schema.relations.len();
        schema
            .relations
            .push(relation(format!("Bids{i}"), &["buyerId", "bid"]));
        let fk = schema.foreign_keys.len();
        schema.foreign_keys.push(ForeignKey {
            name: format!("fBids{i}"),
            domain: bids,
            range: buyer,
            columns: vec![(0, 0)],
        });
        programs.push(find_bids(i, buyer, bids));
        programs.push(place_bid(i, buyer, bids, log, fk));
    }
    Workload {
        name: format!("Auction({n})"),
        description: Some(format!(
            "Auction(n) of Section 7.3 with n = {n}: {} programs, {} LTPs",
            2 * n,
            3 * n
        )),
        schema,
        programs,
    }
}

/// A relation whose first attribute is the key.
fn relation(name: String, attrs: &[&str]) -> Relation {
    Relation {
        name,
        attributes: attrs.iter().map(|a| a.to_string()).collect(),
        primary_key: vec![0],
        unique_keys: vec![],
    }
}

fn set(arity: usize, idx: &[usize]) -> Option<AttrSet> {
    Some(AttrSet::from_indices(arity, idx.iter().copied()))
}

/// A statement: `sets` = (PReadSet, ReadSet, WriteSet).
fn stmt(id: &str, ty: StmtType, rel: usize, sets: [Option<AttrSet>; 3], sql: String) -> Statement {
    let [pread, read, write] = sets;
    Statement {
        id: id.into(),
        ty,
        rel,
        pread,
        read,
        write,
        sql: Some(sql),
        origin: None,
        locking: false,
        held: None,
    }
}

/// Both programs first count the buyer's calls (q1, q3).
fn count_call(id: &str, buyer: usize) -> Statement {
    let sql = "UPDATE Buyer SET calls = calls + 1 WHERE id = :B".to_string();
    stmt(
        id,
        StmtType::KeyUpd,
        buyer,
        [None, set(2, &[1]), set(2, &[1])],
        sql,
    )
}

/// FindBids_i: q1; q2 (Figure 2).
fn find_bids(i: usize, buyer: usize, bids: usize) -> Program {
    let q2 = format!("SELECT bid FROM Bids{i} WHERE bid >= :T");
    Program {
        name: format!("FindBids{i}"),
        abbrev: Some(format!("FB{i}")),
        statements: vec![
            count_call("q1", buyer),
            stmt(
                "q2",
                StmtType::PredSel,
                bids,
                [set(2, &[1]), set(2, &[1]), None],
                q2,
            ),
        ],
        body: Body::Seq(vec![Body::Stmt(0), Body::Stmt(1)]),
        constraints: vec![],
        file: None,
    }
}

/// PlaceBid_i: q3; q4; (q5 | ε); q6 with q3 = fBids_i(q4) = fBids_i(q5)
/// = fLog(q6) (Figure 2).
fn place_bid(i: usize, buyer: usize, bids: usize, log: usize, fk: usize) -> Program {
    let fk_of = |f: usize, child: usize| Constraint {
        kind: ConstraintKind::ForeignKey(f),
        child,
        parent: 0,
    };
    let (q4, q5) = (
        format!("SELECT bid INTO :C FROM Bids{i} WHERE buyerId = :B"),
        format!("UPDATE Bids{i} SET bid = :V WHERE buyerId = :B"),
    );
    let q6 = "INSERT INTO Log VALUES (:logId, :B, :V)".to_string();
    Program {
        name: format!("PlaceBid{i}"),
        abbrev: Some(format!("PB{i}")),
        statements: vec![
            count_call("q3", buyer),
            stmt("q4", StmtType::KeySel, bids, [None, set(2, &[1]), None], q4),
            stmt(
                "q5",
                StmtType::KeyUpd,
                bids,
                [None, set(2, &[]), set(2, &[1])],
                q5,
            ),
            stmt(
                "q6",
                StmtType::Ins,
                log,
                [None, None, set(3, &[0, 1, 2])],
                q6,
            ),
        ],
        body: Body::Seq(vec![
            Body::Stmt(0),
            Body::Stmt(1),
            Body::Opt(Box::new(Body::Stmt(2))),
            Body::Stmt(3),
        ]),
        constraints: vec![fk_of(fk, 1), fk_of(fk, 2), fk_of(0, 3)],
        file: None,
    }
}
