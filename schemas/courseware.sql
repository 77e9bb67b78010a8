-- Courseware (Beillahi, Bouajjani, Enea, CAV 2019, Appendix; after
-- Gotsman et al. POPL 2016 and Nair et al.): students, courses and
-- enrolments. The invariant "every enrolment names an existing course"
-- is kept by the application, not by a FOREIGN KEY (as in the CAV 2019
-- model): with a declared foreign key PostgreSQL's referential checks
-- would lock the course row.
CREATE TABLE Student (
    id   INTEGER PRIMARY KEY,
    name VARCHAR(64) NOT NULL
);

CREATE TABLE Course (
    id    INTEGER PRIMARY KEY,
    title VARCHAR(64) NOT NULL
);

CREATE TABLE Enrolled (
    student_id INTEGER NOT NULL,
    course_id  INTEGER NOT NULL,
    PRIMARY KEY (student_id, course_id)
);
