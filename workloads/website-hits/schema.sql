-- PostgreSQL 15 manual, section 13.2.1 (Read Committed Isolation Level):
-- the table of the Hit/Purge example.
CREATE TABLE website (
    id   integer PRIMARY KEY,
    hits integer NOT NULL
);
