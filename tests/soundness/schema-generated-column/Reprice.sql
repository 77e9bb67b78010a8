UPDATE item SET price = :p WHERE id = :i;
SELECT s FROM summary WHERE id = :k;
