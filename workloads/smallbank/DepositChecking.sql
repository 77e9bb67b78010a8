-- isolint: abbrev DC
-- DepositChecking(:N, :V): add :V to the checking balance of customer :N.
SELECT CustomerID INTO :x FROM Account WHERE Name = :N;
UPDATE Checking SET Balance = Balance + :V WHERE CustomerID = :x;
COMMIT;
