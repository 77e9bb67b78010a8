-- One warehouse with two districts, two customers each, two items, and
-- one undelivered order of one line per district: every consistency
-- condition holds (W_YTD 2 = 1 + 1; D_NEXT_O_ID 2 = max(O_ID) + 1 =
-- max(NO_O_ID) + 1; one NEW-ORDER row; O_OL_CNT 1 = one line).
INSERT INTO Warehouse VALUES (1, 'w1', 's', 's', 'c', 'st', '000000000', 0.1, 2.00);
INSERT INTO District VALUES
  (1, 1, 'd1', 's', 's', 'c', 'st', '000000000', 0.1, 1.00, 2),
  (2, 1, 'd2', 's', 's', 'c', 'st', '000000000', 0.1, 1.00, 2);
INSERT INTO Customer VALUES
  (1, 1, 1, 'f', 'OE', 'k1', 's', 's', 'c', 'st', '000000000', '0', '2001-01-01', 'GC', 50000, 0.1, 0, 0, 0, 0, 'data'),
  (2, 1, 1, 'f', 'OE', 'k2', 's', 's', 'c', 'st', '000000000', '0', '2001-01-01', 'BC', 50000, 0.1, 0, 0, 0, 0, 'data'),
  (1, 2, 1, 'f', 'OE', 'k1', 's', 's', 'c', 'st', '000000000', '0', '2001-01-01', 'GC', 50000, 0.1, 0, 0, 0, 0, 'data'),
  (2, 2, 1, 'f', 'OE', 'k2', 's', 's', 'c', 'st', '000000000', '0', '2001-01-01', 'BC', 50000, 0.1, 0, 0, 0, 0, 'data');
INSERT INTO Item VALUES (1, 1, 'i1', 1.00, 'data'), (2, 2, 'i2', 2.00, 'data');
INSERT INTO Stock VALUES
  (1, 1, 50, 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 0, 0, 0, 'data'),
  (2, 1, 50, 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 0, 0, 0, 'data');
INSERT INTO "Order" VALUES (1, 1, 1, 1, '2001-01-01', NULL, 1, 1), (1, 2, 1, 1, '2001-01-01', NULL, 1, 1);
INSERT INTO NewOrder VALUES (1, 1, 1), (1, 2, 1);
INSERT INTO OrderLine VALUES
  (1, 1, 1, 1, 1, 1, NULL, 1, 1.00, 'k1'),
  (1, 2, 1, 1, 1, 1, NULL, 1, 1.00, 'k1');
