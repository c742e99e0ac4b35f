"""What the platform entrypoints (grading/platforms/<platform>/) share; see common.py."""
