-- Two students, two courses, one enrolment: course 2 has nobody enrolled,
-- so RemoveCourse(2) removes it.
INSERT INTO Student (id, name) VALUES (1, 's1'), (2, 's2');
INSERT INTO Course (id, title) VALUES (1, 'c1'), (2, 'c2');
INSERT INTO Enrolled (student_id, course_id) VALUES (1, 1);
