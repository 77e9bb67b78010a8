-- Migration V3: the TPC-C transactions (clause 2) as PL/pgSQL routines,
-- row at a time like the specification's sample programs (Appendix A).
-- Same statements, in the same order, as workloads/tpcc-paper: Payment's
-- customer belongs to the district that receives the payment.

-- isolint: abbrev NO
-- NewOrder (2.4): an order of p_ol_cnt lines; line i orders item
-- p_item_ids[i] from warehouse p_supply_w_ids[i], quantity p_quantities[i].
CREATE OR REPLACE FUNCTION new_order(
    p_w_id integer, p_d_id integer, p_c_id integer, p_ol_cnt integer,
    p_item_ids integer[], p_supply_w_ids integer[], p_quantities integer[],
    p_all_local integer DEFAULT 1)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    v_w_tax      numeric;
    v_d_tax      numeric;
    v_o_id       integer;
    v_discount   numeric;
    v_last       varchar(16);
    v_credit     char(2);
    v_price      numeric;
    v_name       varchar(24);
    v_data       varchar(50);
    v_s_quantity integer;
    v_s_data     varchar(50);
    v_dist_info  char(24);
BEGIN
    SELECT W_TAX INTO v_w_tax FROM Warehouse WHERE W_ID = p_w_id;
    -- The order number is D_NEXT_O_ID before the increment.
    UPDATE District SET D_NEXT_O_ID = D_NEXT_O_ID + 1
     WHERE D_W_ID = p_w_id AND D_ID = p_d_id
     RETURNING D_TAX, D_NEXT_O_ID - 1 INTO v_d_tax, v_o_id;
    SELECT C_DISCOUNT, C_LAST, C_CREDIT INTO v_discount, v_last, v_credit
      FROM Customer WHERE C_W_ID = p_w_id AND C_D_ID = p_d_id AND C_ID = p_c_id;
    INSERT INTO "Order" (O_ID, O_D_ID, O_W_ID, O_C_ID, O_ENTRY_D, O_CARRIER_ID, O_OL_CNT, O_ALL_LOCAL)
      VALUES (v_o_id, p_d_id, p_w_id, p_c_id, now(), NULL, p_ol_cnt, p_all_local);
    INSERT INTO NewOrder (NO_O_ID, NO_D_ID, NO_W_ID) VALUES (v_o_id, p_d_id, p_w_id);
    FOR i IN 1..p_ol_cnt LOOP
        SELECT I_PRICE, I_NAME, I_DATA INTO v_price, v_name, v_data
          FROM Item WHERE I_ID = p_item_ids[i];
        IF NOT FOUND THEN
            -- 1% of the orders name an unused item (2.4.1.4): roll back.
            RAISE EXCEPTION 'item % not found', p_item_ids[i];
        END IF;
        UPDATE Stock
           SET S_QUANTITY = CASE WHEN S_QUANTITY >= p_quantities[i] + 10
                                 THEN S_QUANTITY - p_quantities[i]
                                 ELSE S_QUANTITY - p_quantities[i] + 91 END,
               S_YTD = S_YTD + p_quantities[i],
               S_ORDER_CNT = S_ORDER_CNT + 1,
               S_REMOTE_CNT = S_REMOTE_CNT + CASE WHEN p_supply_w_ids[i] <> p_w_id THEN 1 ELSE 0 END
         WHERE S_I_ID = p_item_ids[i] AND S_W_ID = p_supply_w_ids[i]
         RETURNING S_QUANTITY, S_DATA,
                   CASE p_d_id WHEN 1 THEN S_DIST_01 WHEN 2 THEN S_DIST_02 WHEN 3 THEN S_DIST_03
                               WHEN 4 THEN S_DIST_04 WHEN 5 THEN S_DIST_05 WHEN 6 THEN S_DIST_06
                               WHEN 7 THEN S_DIST_07 WHEN 8 THEN S_DIST_08 WHEN 9 THEN S_DIST_09
                               ELSE S_DIST_10 END
              INTO v_s_quantity, v_s_data, v_dist_info;
        INSERT INTO OrderLine (OL_O_ID, OL_D_ID, OL_W_ID, OL_NUMBER, OL_I_ID, OL_SUPPLY_W_ID,
                               OL_DELIVERY_D, OL_QUANTITY, OL_AMOUNT, OL_DIST_INFO)
          VALUES (v_o_id, p_d_id, p_w_id, i, p_item_ids[i], p_supply_w_ids[i],
                  NULL, p_quantities[i], p_quantities[i] * v_price, v_dist_info);
    END LOOP;
    RETURN v_o_id;
END;
$$;

-- isolint: abbrev Pay
-- Payment (2.5), home-district variant: customer p_c_id (or, by last name,
-- the middle one of the customers called p_c_last) of district p_d_id in
-- warehouse p_w_id pays p_amount.
CREATE OR REPLACE PROCEDURE payment(
    p_w_id integer, p_d_id integer, p_c_id integer, p_c_last varchar,
    p_by_last_name boolean, p_amount numeric)
LANGUAGE plpgsql
AS $$
DECLARE
    v_c_id      integer := p_c_id;
    w           Warehouse%ROWTYPE;
    v_d_name    varchar(10);
    v_d_street1 varchar(20);
    v_d_street2 varchar(20);
    v_d_city    varchar(20);
    v_d_state   char(2);
    v_d_zip     char(9);
    v_cust      record;
    v_c_data    varchar(500);
BEGIN
    UPDATE Warehouse SET W_YTD = W_YTD + p_amount WHERE W_ID = p_w_id
      RETURNING W_NAME, W_STREET_1, W_STREET_2, W_CITY, W_STATE, W_ZIP
           INTO w.w_name, w.w_street_1, w.w_street_2, w.w_city, w.w_state, w.w_zip;
    UPDATE District SET D_YTD = D_YTD + p_amount WHERE D_W_ID = p_w_id AND D_ID = p_d_id
      RETURNING D_NAME, D_STREET_1, D_STREET_2, D_CITY, D_STATE, D_ZIP
           INTO v_d_name, v_d_street1, v_d_street2, v_d_city, v_d_state, v_d_zip;
    IF p_by_last_name THEN
        -- 60% of payments select the customer by last name (the middle row).
        SELECT C_ID INTO v_c_id FROM Customer
         WHERE C_W_ID = p_w_id AND C_D_ID = p_d_id AND C_LAST = p_c_last ORDER BY C_FIRST;
    END IF;
    UPDATE Customer
       SET C_BALANCE = C_BALANCE - p_amount, C_YTD_PAYMENT = C_YTD_PAYMENT + p_amount,
           C_PAYMENT_CNT = C_PAYMENT_CNT + 1
     WHERE C_W_ID = p_w_id AND C_D_ID = p_d_id AND C_ID = v_c_id
     RETURNING C_FIRST, C_MIDDLE, C_LAST, C_STREET_1, C_STREET_2, C_CITY, C_STATE, C_ZIP,
               C_PHONE, C_SINCE, C_CREDIT, C_CREDIT_LIM, C_DISCOUNT, C_BALANCE
          INTO v_cust;
    IF v_cust.c_credit = 'BC' THEN
        SELECT C_DATA INTO v_c_data FROM Customer
         WHERE C_W_ID = p_w_id AND C_D_ID = p_d_id AND C_ID = v_c_id;
        UPDATE Customer SET C_DATA = substr(v_c_id || ' ' || p_amount || ' ' || v_c_data, 1, 500)
         WHERE C_W_ID = p_w_id AND C_D_ID = p_d_id AND C_ID = v_c_id;
    END IF;
    -- H_DATA is W_NAME and D_NAME separated by 4 spaces (2.5.2.2).
    INSERT INTO History (H_C_ID, H_C_D_ID, H_C_W_ID, H_D_ID, H_W_ID, H_DATE, H_AMOUNT, H_DATA)
      VALUES (v_c_id, p_d_id, p_w_id, p_d_id, p_w_id, now(), p_amount,
              w.w_name || '    ' || v_d_name);
END;
$$;

-- isolint: abbrev OS
-- OrderStatus (2.6): the customer's last order and its lines.
CREATE OR REPLACE FUNCTION order_status(
    p_w_id integer, p_d_id integer, p_c_id integer, p_c_last varchar, p_by_last_name boolean)
RETURNS TABLE (ol_i_id integer, ol_supply_w_id integer, ol_quantity integer,
               ol_amount numeric, ol_delivery_d timestamp)
LANGUAGE plpgsql
AS $$
DECLARE
    v_c_id    integer := p_c_id;
    v_balance numeric;
    v_first   varchar(16);
    v_middle  char(2);
    v_last    varchar(16) := p_c_last;
    v_o_id    integer;
    v_entry_d timestamp;
    v_carrier integer;
BEGIN
    IF p_by_last_name THEN
        SELECT C_ID, C_BALANCE, C_FIRST, C_MIDDLE INTO v_c_id, v_balance, v_first, v_middle
          FROM Customer WHERE C_W_ID = p_w_id AND C_D_ID = p_d_id AND C_LAST = p_c_last
         ORDER BY C_FIRST;
    ELSE
        SELECT C_BALANCE, C_FIRST, C_MIDDLE, C_LAST INTO v_balance, v_first, v_middle, v_last
          FROM Customer WHERE C_W_ID = p_w_id AND C_D_ID = p_d_id AND C_ID = p_c_id;
    END IF;
    SELECT O_ID, O_ENTRY_D, O_CARRIER_ID INTO v_o_id, v_entry_d, v_carrier
      FROM "Order" WHERE O_W_ID = p_w_id AND O_D_ID = p_d_id AND O_C_ID = v_c_id
     ORDER BY O_ID DESC LIMIT 1;
    RETURN QUERY
        SELECT l.OL_I_ID, l.OL_SUPPLY_W_ID, l.OL_QUANTITY, l.OL_AMOUNT, l.OL_DELIVERY_D
          FROM OrderLine l WHERE l.OL_W_ID = p_w_id AND l.OL_D_ID = p_d_id AND l.OL_O_ID = v_o_id;
END;
$$;

-- isolint: abbrev Del
-- Delivery (2.7): deliver the oldest undelivered order of each of the 10
-- districts of warehouse p_w_id, in one transaction. A district without a
-- new order is skipped (2.7.4.2): v_o_id is then NULL and every statement
-- after the SELECT matches no row.
CREATE OR REPLACE PROCEDURE delivery(p_w_id integer, p_carrier_id integer)
LANGUAGE plpgsql
AS $$
DECLARE
    v_o_id  integer;
    v_c_id  integer;
    v_total numeric;
BEGIN
    <<districts>>
    FOR d IN 1..10 LOOP
        SELECT MIN(NO_O_ID) INTO v_o_id FROM NewOrder WHERE NO_W_ID = p_w_id AND NO_D_ID = d;
        DELETE FROM NewOrder WHERE NO_W_ID = p_w_id AND NO_D_ID = d AND NO_O_ID = v_o_id;
        UPDATE "Order" SET O_CARRIER_ID = p_carrier_id
         WHERE O_W_ID = p_w_id AND O_D_ID = d AND O_ID = v_o_id
         RETURNING O_C_ID INTO v_c_id;
        UPDATE OrderLine SET OL_DELIVERY_D = now()
         WHERE OL_W_ID = p_w_id AND OL_D_ID = d AND OL_O_ID = v_o_id;
        SELECT SUM(OL_AMOUNT) INTO v_total FROM OrderLine
         WHERE OL_W_ID = p_w_id AND OL_D_ID = d AND OL_O_ID = v_o_id;
        UPDATE Customer SET C_BALANCE = C_BALANCE + v_total, C_DELIVERY_CNT = C_DELIVERY_CNT + 1
         WHERE C_W_ID = p_w_id AND C_D_ID = d AND C_ID = v_c_id;
    END LOOP districts;
END;
$$;

-- isolint: abbrev SL
-- StockLevel (2.8): how many distinct items of the district's last 20
-- orders have a stock level below p_threshold.
CREATE OR REPLACE FUNCTION stock_level(p_w_id integer, p_d_id integer, p_threshold integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    v_next      integer;
    v_low_stock integer;
BEGIN
    SELECT D_NEXT_O_ID INTO v_next FROM District WHERE D_W_ID = p_w_id AND D_ID = p_d_id;
    SELECT COUNT(DISTINCT S_I_ID) INTO v_low_stock FROM Stock
     WHERE S_W_ID = p_w_id AND S_QUANTITY < p_threshold
       AND S_I_ID IN (SELECT OL_I_ID FROM OrderLine
                       WHERE OL_W_ID = p_w_id AND OL_D_ID = p_d_id
                         AND OL_O_ID < v_next AND OL_O_ID >= v_next - 20);
    RETURN v_low_stock;
END;
$$;
