r"""Key bindings on top of prompt_toolkit's Emacs defaults (which already give Ctrl-C: cancel
the line, Ctrl-D: leave on an empty line, Ctrl-R: search history, Right: take the suggestion).

The prompt is multi-line: Enter runs the text unless it ends with `\` or inside an open quote,
where it starts a continuation line; a pasted block stays in the buffer and runs line by line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prompt_toolkit import search
from prompt_toolkit.application.current import get_app
from prompt_toolkit.enums import DEFAULT_BUFFER
from prompt_toolkit.filters import Condition, completion_is_selected, has_focus, is_searching
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from kafka_shell.declarations.parsing import is_incomplete

if TYPE_CHECKING:
    from kafka_shell.face.repl.app import Repl


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

    @kb.add("enter", filter=has_focus(DEFAULT_BUFFER) & ~(completion_is_selected & choosing))
    def _(event: KeyPressEvent) -> None:
        """Run the text, or go on on a new line after a trailing `\\` or inside a quote."""
        buffer = event.current_buffer
        if is_incomplete(buffer.text):
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @kb.add("c-r", filter=is_searching)
    def _(event: KeyPressEvent) -> None:
        """Ctrl-R again: the next older history entry that matches what is shown. The entry
        shown is a preview: the match found backwards from the buffer's position, which sits
        one step newer. prompt_toolkit's own Ctrl-R moves one match, which is often the same
        entry (a second occurrence in the line, or an identical entry); and its move to the
        match on screen counted as one more (every other match was skipped)."""
        target = event.app.layout.search_target_buffer_control
        if target is None:
            return
        buffer = target.buffer
        if target.search_state.direction != search.SearchDirection.BACKWARD:
            search.do_incremental_search(search.SearchDirection.BACKWARD)  # only turns around
        state = target.search_state
        state.text = event.current_buffer.text

        def shown() -> str:
            return buffer.document_for_search(state).text
        text = shown()
        start = (buffer.working_index, buffer.cursor_position)
        while True:
            before = (buffer.working_index, buffer.cursor_position)
            search.do_incremental_search(search.SearchDirection.BACKWARD)
            if (buffer.working_index, buffer.cursor_position) == before:   # no older match
                buffer.working_index, buffer.cursor_position = start
                return
            if shown() != text:
                return

    return kb
