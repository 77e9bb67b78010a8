SELECT total INTO :t FROM item WHERE id = :i;
UPDATE summary SET s = :t WHERE id = :k;
