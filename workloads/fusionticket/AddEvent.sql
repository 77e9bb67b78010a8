-- isolint: abbrev AE
-- AddEvent(:e, :v, :name, :n): a new event at venue :v with :n tickets.
INSERT INTO Events (id, venue, name, available) VALUES (:e, :v, :name, :n);
COMMIT;
