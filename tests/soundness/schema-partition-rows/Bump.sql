UPDATE m1 SET v = v + 1 WHERE id = :i AND region = 1;
SELECT n FROM cnt WHERE id = 1;
