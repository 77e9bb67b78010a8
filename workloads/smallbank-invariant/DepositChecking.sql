-- isolint: abbrev DC
-- DepositChecking(:N, :V): add :V to the checking balance of :N; a negative
-- amount is refused.
SELECT CustomerID INTO :x FROM Account WHERE Name = :N;
IF :V >= 0 THEN
    UPDATE Checking SET Balance = Balance + :V WHERE CustomerID = :x;
END IF;
COMMIT;
