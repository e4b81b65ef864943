"""The interactive shell. Importing this package is cheap; prompt_toolkit loads in run_repl."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prompt_toolkit.history import History

    from kafka_shell.connection.session import Session


def run_repl(session: Session, input: Any = None, output: Any = None,
             history: History | None = None) -> int:
    """Run the REPL on `session` until Ctrl-D, `exit` or `quit`; return the exit code (0).
    `input`, `output` and `history` (prompt_toolkit's) let tests drive it through a pipe."""
    from kafka_shell.face.repl.app import Repl
    return Repl(session, input=input, output=output, history=history).run()
