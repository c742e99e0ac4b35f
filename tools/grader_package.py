"""Makes the grader's Python package, scangrade, importable by the tools in this folder.

A tool imports this module first (`import grader_package`: this folder is on the path of any script
run from it). The package is grading/scangrade, in the project and in the student handout (which
ships the parts make test and make grade use), loaded here from that folder; one already importable
is used as it is. sys.path is left as it is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

GRADER_PACKAGE = Path(__file__).resolve().parent.parent / "grading" / "scangrade"


def load() -> None:
    """Import scangrade: the one already importable (a path the caller set), else grading/scangrade
    next to this folder."""
    if "scangrade" in sys.modules or importlib.util.find_spec("scangrade") is not None:
        return
    init = GRADER_PACKAGE / "__init__.py"
    spec = importlib.util.spec_from_file_location("scangrade", init, submodule_search_locations=[str(GRADER_PACKAGE)])
    if spec is None or spec.loader is None or not init.is_file():
        raise ImportError(f"the grader's package is not at {GRADER_PACKAGE}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["scangrade"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["scangrade"]
        raise


load()
