-- isolint: abbrev RS
-- RegisterStudent(:s, :name): a new student.
INSERT INTO Student (id, name) VALUES (:s, :name);
COMMIT;
