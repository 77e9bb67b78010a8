-- isolint: abbrev WC
-- WriteCheck(:N, :V): cash a check of :V against the total balance of :N,
-- with a penalty of 1 when the total is too low.
SELECT CustomerID INTO :x FROM Account WHERE Name = :N;
SELECT Balance INTO :a FROM Savings WHERE CustomerID = :x;
SELECT Balance INTO :b FROM Checking WHERE CustomerID = :x;
IF :a + :b < :V THEN
    UPDATE Checking SET Balance = Balance - (:V + 1) WHERE CustomerID = :x;
ELSE
    UPDATE Checking SET Balance = Balance - :V WHERE CustomerID = :x;
END IF;
COMMIT;
