CREATE FUNCTION reg(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO a (k, x) VALUES (p + 10, 0);
  UPDATE b SET z = z + 10 WHERE k = p;
  RETURN 0;
END $$;
