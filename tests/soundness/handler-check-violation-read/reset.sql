CREATE FUNCTION reset(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  UPDATE a SET x = 0 WHERE k = p;
  UPDATE b SET z = z + 10 WHERE k = p;
  RETURN 0;
END $$;
