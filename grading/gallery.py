#!/usr/bin/env python3
"""Grade the gallery of known submissions and check every verdict (scangrade/gallery.py; --help explains it).

    python3 grading/gallery.py --help
"""
import sys

from scangrade.gallery import main

if __name__ == "__main__":
    sys.exit(main())
