#!/usr/bin/env python3
"""Print a results.json as a table (scangrade/report.py; --help explains it).

    python3 grading/report.py --help
"""
import sys

from scangrade.report import main

if __name__ == "__main__":
    sys.exit(main())
