-- TPC-C specification, clause 3.3.2: consistency conditions 1-4 (issue 25).
-- Each query is true when the condition holds for every warehouse/district.

-- invariant: c1_warehouse_ytd
-- W_YTD = sum(D_YTD) over the warehouse's districts.
SELECT bool_and(w.W_YTD = (SELECT sum(d.D_YTD) FROM District d WHERE d.D_W_ID = w.W_ID))
  FROM Warehouse w;

-- invariant: c2_next_order_id
-- D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) in each district (a district
-- without NEW-ORDER rows compares with NULL, which bool_and skips).
SELECT bool_and(d.D_NEXT_O_ID - 1 = (SELECT max(o.O_ID) FROM "Order" o
                                      WHERE o.O_W_ID = d.D_W_ID AND o.O_D_ID = d.D_ID)
            AND d.D_NEXT_O_ID - 1 IS NOT DISTINCT FROM
                coalesce((SELECT max(n.NO_O_ID) FROM NewOrder n
                           WHERE n.NO_W_ID = d.D_W_ID AND n.NO_D_ID = d.D_ID), d.D_NEXT_O_ID - 1))
  FROM District d;

-- invariant: c3_new_orders_contiguous
-- max(NO_O_ID) - min(NO_O_ID) + 1 = the number of NEW-ORDER rows of each district.
SELECT bool_and(x.mx - x.mn + 1 = x.n)
  FROM (SELECT max(NO_O_ID) AS mx, min(NO_O_ID) AS mn, count(*) AS n
          FROM NewOrder GROUP BY NO_W_ID, NO_D_ID) x;

-- invariant: c4_order_lines
-- sum(O_OL_CNT) = the number of ORDER-LINE rows of each district.
SELECT bool_and(coalesce(o.s, 0) = coalesce(l.n, 0))
  FROM (SELECT O_W_ID AS w, O_D_ID AS d, sum(O_OL_CNT) AS s FROM "Order" GROUP BY 1, 2) o
  FULL JOIN (SELECT OL_W_ID AS w, OL_D_ID AS d, count(*) AS n FROM OrderLine GROUP BY 1, 2) l
  USING (w, d);
