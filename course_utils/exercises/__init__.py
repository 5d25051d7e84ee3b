"""Exercise checkers, one module per chapter, built on :mod:`course_utils.exercises.core`."""
