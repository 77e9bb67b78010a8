-- isolint: abbrev AC
-- AddCourse(:c, :title): a new course.
INSERT INTO Course (id, title) VALUES (:c, :title);
COMMIT;
