"""Key bindings on top of prompt_toolkit's Emacs defaults (which already give Ctrl-C: cancel
the line, Ctrl-D: leave on an empty line, Ctrl-R: search history, Right: take the suggestion)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prompt_toolkit.application.current import get_app
from prompt_toolkit.filters import Condition, completion_is_selected
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

if TYPE_CHECKING:
    from kafka_shell.repl.app import Repl


def create_key_bindings(repl: Repl) -> KeyBindings:
    kb = KeyBindings()

    @kb.add("c-space")
    def _(event: KeyPressEvent) -> None:
        """Open the completion menu without typing a character."""
        buffer = event.app.current_buffer
        if buffer.complete_state:
            buffer.complete_next()
        else:
            buffer.start_completion(select_first=False)

    @Condition
    def choosing() -> bool:
        """A menu of several completions is open (one alone is already in the line)."""
        state = get_app().current_buffer.complete_state
        return state is not None and len(state.completions) > 1

    @kb.add("enter", filter=completion_is_selected & choosing)
    def _(event: KeyPressEvent) -> None:
        """Enter on a highlighted completion of a menu takes it instead of running the line."""
        event.current_buffer.complete_state = None

    return kb
