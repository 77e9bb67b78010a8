-- Auction (Section 2 of the paper): Buyer(id, calls), Bids(buyerId, bid), Log(id, buyerId, bid).
CREATE TABLE Buyer (
    id    INTEGER PRIMARY KEY,
    calls INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE Bids (
    buyerId INTEGER PRIMARY KEY,
    bid     INTEGER NOT NULL,
    CONSTRAINT f1 FOREIGN KEY (buyerId) REFERENCES Buyer (id)
);

CREATE TABLE Log (
    id      INTEGER PRIMARY KEY,
    buyerId INTEGER NOT NULL,
    bid     INTEGER NOT NULL,
    CONSTRAINT f2 FOREIGN KEY (buyerId) REFERENCES Buyer (id)
);
