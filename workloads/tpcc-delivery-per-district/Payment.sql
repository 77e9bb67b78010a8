-- isolint: abbrev Pay
-- Payment (TPC-C 2.5): customer :c of district :c_d_id in warehouse :c_w_id
-- pays into district :d of warehouse :w. 85% of payments are home payments
-- (:c_w_id = :w, :c_d_id = :d), 15% come from a remote warehouse, so the
-- customer need not belong to the district updated here.
UPDATE Warehouse SET W_YTD = W_YTD + :h WHERE W_ID = :w
  RETURNING W_NAME, W_STREET_1, W_STREET_2, W_CITY, W_STATE, W_ZIP
       INTO :w_name, :w_street_1, :w_street_2, :w_city, :w_state, :w_zip;
UPDATE District SET D_YTD = D_YTD + :h WHERE D_W_ID = :w AND D_ID = :d
  RETURNING D_NAME, D_STREET_1, D_STREET_2, D_CITY, D_STATE, D_ZIP
       INTO :d_name, :d_street_1, :d_street_2, :d_city, :d_state, :d_zip;
IF :by_last_name THEN
    -- 60% of payments select the customer by last name (the middle row).
    SELECT C_ID INTO :c FROM Customer
     WHERE C_W_ID = :c_w_id AND C_D_ID = :c_d_id AND C_LAST = :c_last ORDER BY C_FIRST;
END IF;
UPDATE Customer
   SET C_BALANCE = C_BALANCE - :h, C_YTD_PAYMENT = C_YTD_PAYMENT + :h, C_PAYMENT_CNT = C_PAYMENT_CNT + 1
 WHERE C_W_ID = :c_w_id AND C_D_ID = :c_d_id AND C_ID = :c
 RETURNING C_FIRST, C_MIDDLE, C_LAST, C_STREET_1, C_STREET_2, C_CITY, C_STATE, C_ZIP,
           C_PHONE, C_SINCE, C_CREDIT, C_CREDIT_LIM, C_DISCOUNT, C_BALANCE
      INTO :c_first, :c_middle, :c_last2, :c_street_1, :c_street_2, :c_city, :c_state, :c_zip,
           :c_phone, :c_since, :c_credit, :c_credit_lim, :c_discount, :c_balance;
IF :c_credit = 'BC' THEN
    SELECT C_DATA INTO :c_data FROM Customer WHERE C_W_ID = :c_w_id AND C_D_ID = :c_d_id AND C_ID = :c;
    UPDATE Customer SET C_DATA = :new_data WHERE C_W_ID = :c_w_id AND C_D_ID = :c_d_id AND C_ID = :c;
END IF;
-- H_DATA is W_NAME and D_NAME separated by 4 spaces (2.5.2.2).
INSERT INTO History (H_C_ID, H_C_D_ID, H_C_W_ID, H_D_ID, H_W_ID, H_DATE, H_AMOUNT, H_DATA)
  VALUES (:c, :c_d_id, :c_w_id, :d, :w, :now, :h, :w_name || '    ' || :d_name);
COMMIT;
