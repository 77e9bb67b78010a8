-- Count a hit on every page (the manual's first transaction).
UPDATE website SET hits = hits + 1;
