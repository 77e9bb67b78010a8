-- isolint: abbrev SL
-- StockLevel (TPC-C 2.8): items of the last 20 orders with stock below :threshold.
SELECT D_NEXT_O_ID INTO :next FROM District WHERE D_W_ID = :w AND D_ID = :d;
SELECT DISTINCT OL_I_ID FROM OrderLine
 WHERE OL_W_ID = :w AND OL_D_ID = :d AND OL_O_ID < :next AND OL_O_ID >= :next - 20;
SELECT COUNT(DISTINCT S_I_ID) INTO :low_stock FROM Stock
 WHERE S_W_ID = :w AND S_I_ID IN (:items) AND S_QUANTITY < :threshold;
COMMIT;
