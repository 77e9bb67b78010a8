INSERT INTO child VALUES (:c, :p);
SELECT v FROM x WHERE id = :x;
