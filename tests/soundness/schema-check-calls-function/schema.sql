CREATE TABLE members (id INT PRIMARY KEY, grp INT);
CREATE FUNCTION under_limit(g INT) RETURNS BOOLEAN LANGUAGE sql AS $$ SELECT count(*) < 2 FROM members WHERE grp = g $$;
ALTER TABLE members ADD CONSTRAINT lim CHECK (under_limit(grp));
