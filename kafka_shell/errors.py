"""Errors the shell reports as one line (no traceback unless --debug), with their exit codes.

Exit codes: 0 ok, 1 failed, 2 usage error (bad command line or input). Commands raise these; the
mode that runs them prints `str(error)` on stderr and returns `error.exit_code`.
"""

from __future__ import annotations


class ShellError(Exception):
    """A failure to report as one line: what happened and what to do."""
    exit_code = 1


class UsageError(ShellError):
    """Bad input: unknown command or option, wrong type, missing value. Nothing was sent."""
    exit_code = 2


class ClusterUnreachable(ShellError):
    """No broker of the bootstrap list answered in time."""


class NotSupported(ShellError):
    """The cluster lacks the API (or version) a command needs."""


class KafkaCallError(ShellError):
    """A Kafka request failed with an error code."""

    def __init__(self, message: str, code: int | None = None, retriable: bool = False):
        super().__init__(message)
        self.code = code
        self.retriable = retriable
