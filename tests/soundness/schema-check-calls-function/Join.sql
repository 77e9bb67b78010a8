INSERT INTO members VALUES (:id, :g);
