-- isolint: abbrev TS
-- TransactSavings(:N, :V): add :V (possibly negative) to the savings balance of :N.
SELECT CustomerID INTO :x FROM Account WHERE Name = :N;
UPDATE Savings SET Balance = Balance + :V WHERE CustomerID = :x;
COMMIT;
