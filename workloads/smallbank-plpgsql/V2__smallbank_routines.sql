-- Migration V2: SmallBank (Alomari et al.) as PL/pgSQL routines, one
-- transaction per call. Same statements, in the same order, as the .sql
-- programs of workloads/smallbank; each routine is a program of the
-- workload (isolint.yaml, `programs:`).

-- isolint: abbrev Am
-- Move all funds of customer p_name1 to p_name2's checking account.
CREATE OR REPLACE PROCEDURE amalgamate(p_name1 varchar, p_name2 varchar)
LANGUAGE plpgsql
AS $$
DECLARE
    v_src   integer;
    v_dst   integer;
    v_sav   numeric;
    v_chk   numeric;
BEGIN
    SELECT CustomerID INTO STRICT v_src FROM Account WHERE Name = p_name1;
    SELECT CustomerID INTO STRICT v_dst FROM Account WHERE Name = p_name2;
    UPDATE Savings SET Balance = 0 WHERE CustomerID = v_src RETURNING Balance INTO v_sav;
    UPDATE Checking SET Balance = 0 WHERE CustomerID = v_src RETURNING Balance INTO v_chk;
    UPDATE Checking SET Balance = Balance + v_sav + v_chk WHERE CustomerID = v_dst;
END;
$$;

-- isolint: abbrev Bal
-- The total balance of customer p_name.
CREATE OR REPLACE FUNCTION balance(p_name varchar)
RETURNS numeric
STABLE
LANGUAGE plpgsql
AS $$
DECLARE
    v_id    Account.CustomerID%TYPE;
    v_sav   numeric;
    v_chk   numeric;
BEGIN
    SELECT CustomerID INTO STRICT v_id FROM Account WHERE Name = p_name;
    SELECT Balance INTO v_sav FROM Savings WHERE CustomerID = v_id;
    -- INTO may also come after FROM.
    SELECT Balance FROM Checking WHERE CustomerID = v_id INTO v_chk;
    RETURN v_sav + v_chk;
END;
$$;

-- isolint: abbrev DC
-- Add p_amount to the checking balance of customer p_name.
CREATE OR REPLACE PROCEDURE deposit_checking(p_name varchar, p_amount numeric)
SECURITY DEFINER
SET search_path = public
AS $body$
DECLARE
    v_id integer;
BEGIN
    SELECT CustomerID INTO STRICT v_id FROM Account WHERE Name = p_name;
    UPDATE Checking SET Balance = Balance + p_amount WHERE CustomerID = v_id;
END
$body$ LANGUAGE plpgsql;

-- isolint: abbrev TS
-- Add p_amount (possibly negative) to the savings balance of p_name.
CREATE OR REPLACE PROCEDURE transact_savings(varchar, numeric)
LANGUAGE plpgsql
AS $$
DECLARE
    p_name   ALIAS FOR $1;
    p_amount ALIAS FOR $2;
    v_id     integer;
BEGIN
    SELECT CustomerID INTO STRICT v_id FROM Account WHERE Name = p_name;
    UPDATE Savings SET Balance = Balance + p_amount WHERE CustomerID = v_id;
END;
$$;

-- isolint: abbrev WC
-- Cash a check of p_amount against the total balance of p_name, with a
-- penalty of 1 when the total is too low.
CREATE OR REPLACE PROCEDURE write_check(p_name varchar, p_amount numeric)
LANGUAGE plpgsql
AS $$
DECLARE
    v_id    integer;
    v_sav   numeric;
    v_chk   numeric;
    v_total numeric := 0;
BEGIN
    SELECT CustomerID INTO STRICT v_id FROM Account WHERE Name = p_name;
    SELECT Balance INTO v_sav FROM Savings WHERE CustomerID = v_id;
    SELECT Balance INTO v_chk FROM Checking WHERE CustomerID = v_id;
    v_total := v_sav + v_chk;
    IF v_total < p_amount THEN
        UPDATE Checking SET Balance = Balance - (p_amount + 1) WHERE CustomerID = v_id;
    ELSE
        UPDATE Checking SET Balance = Balance - p_amount WHERE CustomerID = v_id;
    END IF;
END;
$$;
