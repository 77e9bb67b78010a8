CREATE TABLE item (id INT PRIMARY KEY, price INT, qty INT, note INT, total INT GENERATED ALWAYS AS (price * qty) STORED);
CREATE TABLE summary (id INT PRIMARY KEY, s INT);
