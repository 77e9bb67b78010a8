-- isolint: abbrev RC
-- RemoveCourse(:c): remove a course nobody is enrolled in.
SELECT count(*) INTO :k FROM Enrolled WHERE course_id = :c;
IF :k = 0 THEN
    DELETE FROM Course WHERE id = :c;
END IF;
COMMIT;
