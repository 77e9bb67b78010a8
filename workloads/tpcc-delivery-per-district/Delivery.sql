-- isolint: abbrev Del
-- Delivery (TPC-C 2.7) with one transaction per district: the
-- specification lets the ten districts be delivered in up to ten
-- transactions (2.7.4.2). This transaction delivers the oldest
-- undelivered order of district :d of warehouse :w with carrier :carrier.
-- A district without a new order is skipped: :o is then NULL and every
-- statement after the SELECT matches no row. Otherwise the same
-- statements as one iteration of workloads/tpcc/Delivery.sql.
SELECT MIN(NO_O_ID) INTO :o FROM NewOrder WHERE NO_W_ID = :w AND NO_D_ID = :d;
DELETE FROM NewOrder WHERE NO_W_ID = :w AND NO_D_ID = :d AND NO_O_ID = :o;
UPDATE "Order" SET O_CARRIER_ID = :carrier
 WHERE O_W_ID = :w AND O_D_ID = :d AND O_ID = :o
 RETURNING O_C_ID INTO :c;
UPDATE OrderLine SET OL_DELIVERY_D = :now WHERE OL_W_ID = :w AND OL_D_ID = :d AND OL_O_ID = :o;
SELECT SUM(OL_AMOUNT) INTO :total FROM OrderLine WHERE OL_W_ID = :w AND OL_D_ID = :d AND OL_O_ID = :o;
UPDATE Customer SET C_BALANCE = C_BALANCE + :total, C_DELIVERY_CNT = C_DELIVERY_CNT + 1
 WHERE C_W_ID = :w AND C_D_ID = :d AND C_ID = :c;
COMMIT;
