-- isolint: abbrev WC
-- WriteCheck(:N, :V): cash a check of :V from the checking account of :N,
-- only when the customer's checking + savings covers it (no overdraft
-- penalty: the invariant variant of CAV 2019).
SELECT CustomerID INTO :x FROM Account WHERE Name = :N;
SELECT Balance INTO :a FROM Savings WHERE CustomerID = :x;
SELECT Balance INTO :b FROM Checking WHERE CustomerID = :x;
IF :V >= 0 AND :a + :b >= :V THEN
    UPDATE Checking SET Balance = Balance - :V WHERE CustomerID = :x;
END IF;
COMMIT;
