"""Broken adapters and malformed input files for tests/test_bad_inputs.py: every one of them
must end `gradspec` in one line on stderr and exit code 2 (or, for the duck-typed adapters
that only misbehave mid-run, a divergence or a one-line error), never a traceback."""
