#!/usr/bin/env python3
"""Grade a folder of submissions: a gradebook, a report and every student's results (scangrade/batch.py; --help explains it).

    python3 grading/batch.py --help
"""
import sys

from scangrade.batch import main

if __name__ == "__main__":
    sys.exit(main())
