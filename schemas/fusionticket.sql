-- FusionTicket (Beillahi, Bouajjani, Enea, CAV 2019, Appendix): events
-- at venues with a number of tickets still available.
CREATE TABLE Events (
    id        INTEGER PRIMARY KEY,
    venue     INTEGER NOT NULL,
    name      VARCHAR(64) NOT NULL,
    available INTEGER NOT NULL
);
