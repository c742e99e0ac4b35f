#!/usr/bin/env python3
"""Grade one submission: unpack, compile, judge, export, print a table (scangrade/grade.py; --help explains it).

    python3 grading/grade.py --help
"""
import sys

from scangrade.grade import main

if __name__ == "__main__":
    sys.exit(main())
