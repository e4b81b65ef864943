"""The interactive shell. Importing this package is cheap; prompt_toolkit loads in run_repl."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_shell.session import Session


def run_repl(session: Session, **kw: object) -> int:
    """Run the REPL on `session` until Ctrl-D, `exit` or `quit`; return the exit code (0).
    `kw` (input, output, history) lets tests drive it through a pipe."""
    from kafka_shell.repl.app import Repl
    return Repl(session, **kw).run()
