-- isolint: abbrev NO
-- NewOrder (TPC-C 2.4): a new order of :ol_cnt lines for customer :c of district :d.
SELECT W_TAX INTO :w_tax FROM Warehouse WHERE W_ID = :w;
UPDATE District SET D_NEXT_O_ID = D_NEXT_O_ID + 1
 WHERE D_W_ID = :w AND D_ID = :d
 RETURNING D_TAX, D_NEXT_O_ID INTO :d_tax, :o_id;
SELECT C_DISCOUNT, C_LAST, C_CREDIT INTO :c_discount, :c_last, :c_credit
  FROM Customer WHERE C_W_ID = :w AND C_D_ID = :d AND C_ID = :c;
INSERT INTO "Order" (O_ID, O_D_ID, O_W_ID, O_C_ID, O_ENTRY_D, O_CARRIER_ID, O_OL_CNT, O_ALL_LOCAL)
  VALUES (:o_id, :d, :w, :c, :now, NULL, :ol_cnt, :all_local);
INSERT INTO NewOrder (NO_O_ID, NO_D_ID, NO_W_ID) VALUES (:o_id, :d, :w);
-- One iteration per order line: item :i from supply warehouse :sw.
FOR i IN ARRAY :items LOOP
    SELECT I_PRICE, I_NAME, I_DATA INTO :i_price, :i_name, :i_data FROM Item WHERE I_ID = :i;
    UPDATE Stock
       SET S_QUANTITY = CASE WHEN S_QUANTITY >= :qty + 10 THEN S_QUANTITY - :qty ELSE S_QUANTITY - :qty + 91 END,
           S_YTD = S_YTD + :qty,
           S_ORDER_CNT = S_ORDER_CNT + 1,
           S_REMOTE_CNT = S_REMOTE_CNT + :remote
     WHERE S_I_ID = :i AND S_W_ID = :sw
     RETURNING S_DIST_01, S_DIST_02, S_DIST_03, S_DIST_04, S_DIST_05,
               S_DIST_06, S_DIST_07, S_DIST_08, S_DIST_09, S_DIST_10, S_DATA
          INTO :d01, :d02, :d03, :d04, :d05, :d06, :d07, :d08, :d09, :d10, :s_data;
    INSERT INTO OrderLine (OL_O_ID, OL_D_ID, OL_W_ID, OL_NUMBER, OL_I_ID, OL_SUPPLY_W_ID,
                           OL_DELIVERY_D, OL_QUANTITY, OL_AMOUNT, OL_DIST_INFO)
      VALUES (:o_id, :d, :w, :ol_number, :i, :sw, NULL, :qty, :amount, :dist_info);
END LOOP;
COMMIT;
