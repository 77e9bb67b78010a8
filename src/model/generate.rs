//! Workload generators. Auction(n) (Section 7.3): n items, each with its
//! own relation Bids_i and programs FindBids_i and PlaceBid_i as in
//! Figure 2, all sharing Buyer and Log. Auction(1) is the paper's Auction.

use crate::model::btp::{Body, Constraint, ConstraintKind, Program, Statement, StmtType, Workload};
use crate::model::schema::{AttrSet, ForeignKey, Relation, Schema};

pub fn auction(n: usize) -> Workload {
    let rel = |name: String, attrs: &[&str]| Relation {
        name,
        attributes: attrs.iter().map(|a| a.to_string()).collect(),
        primary_key: vec![0],
        unique_keys: vec![],
    };
    let (buyer, log) = (0, 1);
    let mut schema = Schema {
        relations: vec![
            rel("Buyer".into(), &["id", "calls"]),
            rel("Log".into(), &["id", "buyerId", "bid"]),
        ],
        foreign_keys: vec![ForeignKey {
            name: "fLog".into(),
            domain: log,
            range: buyer,
            columns: vec![(1, 0)],
        }],
    };
    let set = |arity: usize, idx: &[usize]| Some(AttrSet::from_indices(arity, idx.iter().copied()));
    let stmt = |id: String, ty: StmtType, rel: usize, pread, read, write, sql: String| Statement {
        id,
        ty,
        rel,
        pread,
        read,
        write,
        sql: Some(sql),
        origin: None,
        locking: false,
    };
    let mut programs = vec![];
    for i in 1..=n {
        let bids = schema.relations.len();
        schema
            .relations
            .push(rel(format!("Bids{i}"), &["buyerId", "bid"]));
        let fk = schema.foreign_keys.len();
        schema.foreign_keys.push(ForeignKey {
            name: format!("fBids{i}"),
            domain: bids,
            range: buyer,
            columns: vec![(0, 0)],
        });
        let calls = || {
            stmt(
                "q".into(),
                StmtType::KeyUpd,
                buyer,
                None,
                set(2, &[1]),
                set(2, &[1]),
                "UPDATE Buyer SET calls = calls + 1 WHERE id = :B".into(),
            )
        };
        programs.push(Program {
            name: format!("FindBids{i}"),
            abbrev: Some(format!("FB{i}")),
            statements: vec![
                Statement {
                    id: "q1".into(),
                    ..calls()
                },
                stmt(
                    "q2".into(),
                    StmtType::PredSel,
                    bids,
                    set(2, &[1]),
                    set(2, &[1]),
                    None,
                    format!("SELECT bid FROM Bids{i} WHERE bid >= :T"),
                ),
            ],
            body: Body::Seq(vec![Body::Stmt(0), Body::Stmt(1)]),
            constraints: vec![],
            file: None,
        });
        programs.push(Program {
            name: format!("PlaceBid{i}"),
            abbrev: Some(format!("PB{i}")),
            statements: vec![
                Statement {
                    id: "q3".into(),
                    ..calls()
                },
                stmt(
                    "q4".into(),
                    StmtType::KeySel,
                    bids,
                    None,
                    set(2, &[1]),
                    None,
                    format!("SELECT bid INTO :C FROM Bids{i} WHERE buyerId = :B"),
                ),
                stmt(
                    "q5".into(),
                    StmtType::KeyUpd,
                    bids,
                    None,
                    set(2, &[]),
                    set(2, &[1]),
                    format!("UPDATE Bids{i} SET bid = :V WHERE buyerId = :B"),
                ),
                stmt(
                    "q6".into(),
                    StmtType::Ins,
                    log,
                    None,
                    None,
                    set(3, &[0, 1, 2]),
                    "INSERT INTO Log VALUES (:logId, :B, :V)".into(),
                ),
            ],
            body: Body::Seq(vec![
                Body::Stmt(0),
                Body::Stmt(1),
                Body::Opt(Box::new(Body::Stmt(2))),
                Body::Stmt(3),
            ]),
            constraints: vec![
                Constraint {
                    kind: ConstraintKind::ForeignKey(fk),
                    child: 1,
                    parent: 0,
                },
                Constraint {
                    kind: ConstraintKind::ForeignKey(fk),
                    child: 2,
                    parent: 0,
                },
                Constraint {
                    kind: ConstraintKind::ForeignKey(0),
                    child: 3,
                    parent: 0,
                },
            ],
            file: None,
        });
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
