CREATE FUNCTION touch(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE n int; v int;
BEGIN
  UPDATE a SET x = x + 1 WHERE k = p + 10;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n = 0 THEN
    SELECT z INTO v FROM b WHERE k = p;
  END IF;
  RETURN v;
END $$;
