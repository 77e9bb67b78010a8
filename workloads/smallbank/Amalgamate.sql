-- isolint: abbrev Am
-- Amalgamate(:N1, :N2): move all funds of customer :N1 to :N2's checking account.
SELECT CustomerID INTO :x FROM Account WHERE Name = :N1;
SELECT CustomerID INTO :y FROM Account WHERE Name = :N2;
UPDATE Savings SET Balance = 0 WHERE CustomerID = :x RETURNING Balance INTO :a;
UPDATE Checking SET Balance = 0 WHERE CustomerID = :x RETURNING Balance INTO :b;
UPDATE Checking SET Balance = Balance + :a + :b WHERE CustomerID = :y;
COMMIT;
