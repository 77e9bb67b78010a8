-- isolint: abbrev OS
-- OrderStatus (TPC-C 2.6): the customer's last order and its lines.
IF :by_last_name THEN
    SELECT C_ID, C_BALANCE, C_FIRST, C_MIDDLE INTO :c, :c_balance, :c_first, :c_middle
      FROM Customer WHERE C_W_ID = :w AND C_D_ID = :d AND C_LAST = :c_last ORDER BY C_FIRST;
ELSE
    SELECT C_BALANCE, C_FIRST, C_MIDDLE, C_LAST INTO :c_balance, :c_first, :c_middle, :c_last
      FROM Customer WHERE C_W_ID = :w AND C_D_ID = :d AND C_ID = :c;
END IF;
SELECT O_ID, O_ENTRY_D, O_CARRIER_ID INTO :o_id, :o_entry_d, :o_carrier_id
  FROM "Order" WHERE O_W_ID = :w AND O_D_ID = :d AND O_C_ID = :c
 ORDER BY O_ID DESC LIMIT 1;
SELECT OL_I_ID, OL_SUPPLY_W_ID, OL_QUANTITY, OL_AMOUNT, OL_DELIVERY_D
  FROM OrderLine WHERE OL_W_ID = :w AND OL_D_ID = :d AND OL_O_ID = :o_id;
COMMIT;
