#!/usr/bin/env python3
"""Grade a folder of submissions: a gradebook, a report and every student's results (scangrade/batch.py; --help explains it).

    python3 grading/batch.py --help
"""
import sys
from pathlib import Path

# Jinja2, PyYAML and tqdm where tools/deps.sh put them when this Python takes no pip packages (PEP 668):
# pip --target's folder, or Debian's packages unpacked without root
DEPS = Path(__file__).resolve().parent.parent / ".deps"
for local in (DEPS / "python", DEPS / "root/usr/lib/python3/dist-packages"):
    if local.is_dir():
        sys.path.append(str(local))

from scangrade.batch import main  # noqa: E402  (after the path above)

if __name__ == "__main__":
    sys.exit(main())
