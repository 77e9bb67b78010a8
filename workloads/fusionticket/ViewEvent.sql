-- isolint: abbrev VE
-- ViewEvent(:e): an event and its tickets left.
SELECT name, available INTO :name, :n FROM Events WHERE id = :e;
COMMIT;
