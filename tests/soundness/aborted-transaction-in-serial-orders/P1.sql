UPDATE t2 SET a = a + 1 WHERE id = :k;
UPDATE t0 SET a = a + 1 WHERE id = :k;
