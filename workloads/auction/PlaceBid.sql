-- isolint: abbrev PB
-- PlaceBid(:B, :V): raise buyer :B's bid to :V if higher, and log it.
UPDATE Buyer SET calls = calls + 1 WHERE id = :B;
SELECT bid INTO :C FROM Bids WHERE buyerId = :B;
IF :C < :V THEN
    UPDATE Bids SET bid = :V WHERE buyerId = :B;
END IF;
INSERT INTO Log VALUES (:logId, :B, :V);
COMMIT;
