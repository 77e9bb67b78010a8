SELECT sum(v) INTO :s FROM m;
UPDATE cnt SET n = :s WHERE id = 1;
