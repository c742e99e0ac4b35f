"""Logging for the command-line tools: `prog: message` on stderr, `prog: error: message` for errors,
`prog: warning: message` for warnings. The modules log through logging.getLogger(__name__)."""

from __future__ import annotations

import logging
import sys


class _Formatter(logging.Formatter):
    def __init__(self, prog: str) -> None:
        super().__init__()
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        level = {logging.ERROR: "error: ", logging.CRITICAL: "error: ", logging.WARNING: "warning: "}
        return f"{self.prog}: {level.get(record.levelno, '')}{record.getMessage()}"


def setup(prog: str, quiet: bool = False, stream=None) -> logging.Logger:
    """Route the package's log records to stderr under `prog`; quiet: errors only. Returns the
    package logger."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_Formatter(prog))
    logger = logging.getLogger("scangrade")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.ERROR if quiet else logging.INFO)
    logger.propagate = False
    return logger
