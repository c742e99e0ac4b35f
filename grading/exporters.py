#!/usr/bin/env python3
"""Export a results.json to the formats of grading platforms (scangrade/exporters.py; --help explains it).

    python3 grading/exporters.py --help
"""
import sys

from scangrade.exporters import main

if __name__ == "__main__":
    sys.exit(main())
