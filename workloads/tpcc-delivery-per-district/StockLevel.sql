-- isolint: abbrev SL
-- StockLevel (TPC-C 2.8): how many distinct items of the district's last 20
-- orders have a stock level below :threshold in warehouse :w.
SELECT D_NEXT_O_ID INTO :next FROM District WHERE D_W_ID = :w AND D_ID = :d;
-- The subquery reads OrderLine (q27) before the outer read of Stock (q28).
SELECT COUNT(DISTINCT S_I_ID) INTO :low_stock FROM Stock
 WHERE S_W_ID = :w AND S_QUANTITY < :threshold
   AND S_I_ID IN (SELECT OL_I_ID FROM OrderLine
                   WHERE OL_W_ID = :w AND OL_D_ID = :d
                     AND OL_O_ID < :next AND OL_O_ID >= :next - 20);
COMMIT;
