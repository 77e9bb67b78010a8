-- isolint: abbrev ES
-- EnrollStudent(:s, :c): enrol a registered student in an existing course.
SELECT name INTO :n FROM Student WHERE id = :s;
SELECT title INTO :t FROM Course WHERE id = :c;
IF FOUND THEN
    INSERT INTO Enrolled (student_id, course_id) VALUES (:s, :c);
END IF;
COMMIT;
