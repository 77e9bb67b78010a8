-- Two customers, 1 in each balance: every invariant holds.
INSERT INTO Account (Name, CustomerID) VALUES ('k1', 1), ('k2', 2);
INSERT INTO Savings (CustomerID, Balance) VALUES (1, 1), (2, 1);
INSERT INTO Checking (CustomerID, Balance) VALUES (1, 1), (2, 1);
