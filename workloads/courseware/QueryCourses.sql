-- isolint: abbrev QC
-- QueryCourses(): the courses offered.
SELECT id, title FROM Course;
COMMIT;
