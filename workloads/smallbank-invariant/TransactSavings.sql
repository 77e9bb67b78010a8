-- isolint: abbrev TS
-- TransactSavings(:N, :V): withdraw :V from the savings of :N, only when the
-- customer's checking + savings covers it (CAV 2019's SmallBank).
SELECT CustomerID INTO :x FROM Account WHERE Name = :N;
SELECT Balance INTO :a FROM Savings WHERE CustomerID = :x;
SELECT Balance INTO :b FROM Checking WHERE CustomerID = :x;
IF :V >= 0 AND :a + :b >= :V THEN
    UPDATE Savings SET Balance = Balance - :V WHERE CustomerID = :x;
END IF;
COMMIT;
