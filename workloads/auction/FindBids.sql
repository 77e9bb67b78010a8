-- isolint: abbrev FB
-- FindBids(:B, :T): all current bids of at least :T; counts the call.
UPDATE Buyer SET calls = calls + 1 WHERE id = :B;
SELECT bid FROM Bids WHERE bid >= :T;
COMMIT;
