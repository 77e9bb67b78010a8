UPDATE x SET v = v + 1 WHERE id = :x;
INSERT INTO parent VALUES (:p);
