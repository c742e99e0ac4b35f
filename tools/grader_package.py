"""Makes the grader's Python package, scangrade, importable by the tools in this folder.

A tool imports this module first (`import grader_package`: this folder is on the path of any script
run from it). In the student handout the package ships next to the tools (tools/scangrade: the
grader's file-name rules) and is found as it is; in the project it is grading/scangrade, loaded here
from that folder. sys.path is left as it is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

GRADER_PACKAGE = Path(__file__).resolve().parent.parent / "grading" / "scangrade"


def load() -> None:
    """Import scangrade: the one already importable (the handout's tools/scangrade, or a path the
    caller set), else grading/scangrade of this project."""
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
