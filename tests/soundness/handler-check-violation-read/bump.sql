CREATE FUNCTION bump(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE v int;
BEGIN
  BEGIN
    UPDATE a SET x = x + 100 WHERE k = p;
  EXCEPTION WHEN check_violation THEN
    SELECT z INTO v FROM b WHERE k = p;
  END;
  RETURN v;
END $$;
