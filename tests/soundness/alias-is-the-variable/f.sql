CREATE FUNCTION f(p int, q int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r ALIAS FOR p; v int;
BEGIN
  UPDATE a SET x = x + 1 WHERE k = p;
  r := q;
  SELECT x INTO v FROM a WHERE k = p;
  RETURN v;
END $$;
