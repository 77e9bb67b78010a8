-- isolint: abbrev NO
-- NewOrder (TPC-C 2.4): an order of :ol_cnt lines for customer :c of district
-- :d in warehouse :w. In iteration :i, :ol_i_id, :ol_supply_w_id and
-- :ol_quantity are the i-th line's item, supplying warehouse and quantity
-- (the terminal's input lists; the front-end has no array subscripts).
SELECT W_TAX INTO :w_tax FROM Warehouse WHERE W_ID = :w;
-- The order number is the value of D_NEXT_O_ID before the increment.
UPDATE District SET D_NEXT_O_ID = D_NEXT_O_ID + 1
 WHERE D_W_ID = :w AND D_ID = :d
 RETURNING D_TAX, D_NEXT_O_ID - 1 INTO :d_tax, :o_id;
SELECT C_DISCOUNT, C_LAST, C_CREDIT INTO :c_discount, :c_last, :c_credit
  FROM Customer WHERE C_W_ID = :w AND C_D_ID = :d AND C_ID = :c;
INSERT INTO "Order" (O_ID, O_D_ID, O_W_ID, O_C_ID, O_ENTRY_D, O_CARRIER_ID, O_OL_CNT, O_ALL_LOCAL)
  VALUES (:o_id, :d, :w, :c, :now, NULL, :ol_cnt, :all_local);
INSERT INTO NewOrder (NO_O_ID, NO_D_ID, NO_W_ID) VALUES (:o_id, :d, :w);
FOR i IN 1..:ol_cnt LOOP
    SELECT I_PRICE, I_NAME, I_DATA INTO :i_price, :i_name, :i_data FROM Item WHERE I_ID = :ol_i_id;
    IF NOT FOUND THEN
        -- 1% of the orders name an unused item (2.4.1.4): roll the whole order back.
        ROLLBACK;
    END IF;
    UPDATE Stock
       SET S_QUANTITY = CASE WHEN S_QUANTITY >= :ol_quantity + 10 THEN S_QUANTITY - :ol_quantity
                             ELSE S_QUANTITY - :ol_quantity + 91 END,
           S_YTD = S_YTD + :ol_quantity,
           S_ORDER_CNT = S_ORDER_CNT + 1,
           S_REMOTE_CNT = S_REMOTE_CNT + CASE WHEN :ol_supply_w_id <> :w THEN 1 ELSE 0 END
     WHERE S_I_ID = :ol_i_id AND S_W_ID = :ol_supply_w_id
     RETURNING S_QUANTITY, S_DIST_01, S_DIST_02, S_DIST_03, S_DIST_04, S_DIST_05,
               S_DIST_06, S_DIST_07, S_DIST_08, S_DIST_09, S_DIST_10, S_DATA
          INTO :s_quantity, :s_dist_01, :s_dist_02, :s_dist_03, :s_dist_04, :s_dist_05,
               :s_dist_06, :s_dist_07, :s_dist_08, :s_dist_09, :s_dist_10, :s_data;
    -- :ol_dist_info is :s_dist_xx for xx = :d, picked by the application.
    INSERT INTO OrderLine (OL_O_ID, OL_D_ID, OL_W_ID, OL_NUMBER, OL_I_ID, OL_SUPPLY_W_ID,
                           OL_DELIVERY_D, OL_QUANTITY, OL_AMOUNT, OL_DIST_INFO)
      VALUES (:o_id, :d, :w, :i, :ol_i_id, :ol_supply_w_id,
              NULL, :ol_quantity, :ol_quantity * :i_price, :ol_dist_info);
END LOOP;
COMMIT;
