-- isolint: abbrev Br
-- Browse(:v): the events planned at venue :v.
SELECT id, name FROM Events WHERE venue = :v;
COMMIT;
