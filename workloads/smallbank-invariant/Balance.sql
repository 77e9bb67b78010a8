-- isolint: abbrev Bal
-- Balance(:N): the total balance of customer :N.
SELECT CustomerID INTO :x FROM Account WHERE Name = :N;
SELECT Balance INTO :a FROM Savings WHERE CustomerID = :x;
SELECT Balance INTO :b FROM Checking WHERE CustomerID = :x;
COMMIT;
