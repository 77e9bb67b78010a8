-- isolint: abbrev Pu
-- Purchase(:e): buy a ticket for event :e if one is left.
UPDATE Events SET available = available - 1 WHERE id = :e AND available > 0;
COMMIT;
