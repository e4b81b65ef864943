"""The REPL loop: prompt -> `runner.run_line(session, line)`, until Ctrl-D, `exit` or `quit`.

A watcher thread keeps the completer in step with the metadata cache: it asks for a background
refresh every 30 s, and when the connection manager has swapped in a new snapshot it builds a new
completer and swaps it in with one assignment (the prompt reads it through DynamicCompleter).
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import time
from typing import Any, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import DynamicCompleter, ThreadedCompleter
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import History
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.patch_stdout import patch_stdout

from kafka_shell.base.errors import UsageError, shown
from kafka_shell.connection.metadata import EMPTY, ClusterSnapshot
from kafka_shell.declarations.parsing import logical_lines, split_commands, split_redirect
from kafka_shell.declarations.registry import load_commands
from kafka_shell.face.repl.completer import KafkaCompleter
from kafka_shell.face.repl.history import SecretFreeHistory, history_path
from kafka_shell.face.repl.key_bindings import create_key_bindings
from kafka_shell.face.repl.lexer import lexer_for
from kafka_shell.face.repl.redirect import open_file, redirected, swapped_stdout, target_file
from kafka_shell.face.repl.style import create_style
from kafka_shell.face.repl.toolbar import create_toolbar
from kafka_shell.connection.session import Session

EXIT_WORDS = ("exit", "quit")


class Repl:
    refresh_every_s = 30.0   # background metadata refresh
    poll_s = 0.5             # how soon a new snapshot reaches the completer and toolbar
    overrides_keep_s = 30.0  # how long an entity's config overrides serve completion

    def __init__(self, session: Session, input: Any = None, output: Any = None,
                 history: History | None = None):
        self.session = session
        session.refresh_after_mutation = True  # completion and the toolbar follow our changes
        self.registry = load_commands()
        self._overrides: dict[tuple[str, str], tuple[float, list[str] | None]] = {}
        self.output: TextIO | None = None   # `\o FILE`: where every result goes
        self.completer = self._build_completer(self._snapshot())
        self._swap_lock = threading.Lock()
        self._stop = threading.Event()
        self.prompt_session: PromptSession[str] = PromptSession(
            message=self.message,
            completer=ThreadedCompleter(DynamicCompleter(lambda: self.completer)),
            complete_while_typing=True,
            multiline=True,               # Enter runs the line unless it goes on (key_bindings)
            prompt_continuation=_continuation,
            lexer=PygmentsLexer(lexer_for(self.registry, lambda: self._snapshot().topics)),
            auto_suggest=AutoSuggestFromHistory(),
            history=history if history is not None else SecretFreeHistory(history_path()),
            bottom_toolbar=create_toolbar(self),
            style=create_style(),
            key_bindings=create_key_bindings(self),
            input=input, output=output,
        )
        # Its own session: the answer must not land in history nor get completions.
        self._confirm_session: PromptSession[str] = PromptSession(input=input, output=output)

    # -- what the prompt shows ----------------------------------------------------------------

    def message(self) -> StyleAndTextTuples:
        if self.session.topic:
            return [("class:prompt", "kafka "), ("class:prompt.topic", self.session.topic),
                    ("class:prompt", "> ")]
        return [("class:prompt", "kafka> ")]

    def cluster_name(self) -> str:
        if self.session.cluster:
            return self.session.cluster
        if self.session.sandbox is not None:
            return "sandbox"
        return self.session.target.bootstrap if self.session.target else "-"

    def _snapshot(self) -> ClusterSnapshot:
        return self.session.conn.snapshot if self.session.connected else EMPTY

    # -- the loop -----------------------------------------------------------------------------

    def run(self) -> int:
        self.session.connect()  # first (main has greeted with the controller's address)
        self._sync_completer()
        self.session.interactive = True
        self.session.confirm = self.confirm
        threading.Thread(target=self._watch, name="kafka-shell-watcher", daemon=True).start()
        try:
            while True:
                try:
                    line = self.read_line()
                except KeyboardInterrupt:   # Ctrl-C at the prompt: drop the line, prompt again
                    continue
                except EOFError:            # Ctrl-D
                    return 0
                # A pasted block, or continued lines: each logical line runs on its own, and
                # so does each command of it (`a; exit` runs a, then leaves; a failure stops
                # the rest of its line, as everywhere).
                for _, text in logical_lines(line.splitlines()):
                    for part in split_commands(text):
                        if part.strip() in EXIT_WORDS:
                            return 0
                        if self.execute(part):
                            break
        finally:
            self._stop.set()
            if self.output is not None:
                self.output.close()

    def read_line(self) -> str:
        """Prompt for a line. On a terminal, notices from background threads (controller moved)
        print above the prompt meanwhile, not through it; a command's own output goes straight
        to the terminal, in order."""
        s = self.session
        if s.stdout is not sys.stdout or s.stderr is not sys.stderr or not sys.stdout.isatty():
            return self.prompt_session.prompt()
        original = s.stdout, s.stderr
        with patch_stdout(raw=True):
            s.stdout, s.stderr = sys.stdout, sys.stderr
            try:
                return self.prompt_session.prompt()
            finally:
                s.stdout, s.stderr = original

    def execute(self, line: str) -> int:
        """Run one line; Ctrl-C while it runs cancels it and comes back to the prompt. Its
        results go where the line says (`> FILE`, `>> FILE`, `| COMMAND`), else to the file of `\\o`,
        else to the terminal."""
        from kafka_shell.face.runner import run_line
        s = self.session
        try:
            if line.strip() == "\\o" or line.strip().startswith("\\o "):
                return self.output_to(line.strip()[2:].strip())
            command, op, target = split_redirect(line)
            with contextlib.ExitStack() as stack:
                if op:
                    stack.enter_context(swapped_stdout(s, stack.enter_context(redirected(op, target))))
                elif self.output is not None:
                    stack.enter_context(swapped_stdout(s, self.output))
                code = run_line(s, command)
        except UsageError as exc:   # a redirect that cannot be made: nothing ran
            s.stderr.write(f"{exc}\n")
            s.stderr.flush()
            code = exc.exit_code
        except KeyboardInterrupt:
            s.stderr.write("Cancelled.\n")
            s.stderr.flush()
            code = 130
        self._overrides.clear()
        self._sync_completer()
        return code

    def output_to(self, target: str) -> int:
        """pgcli's `\\o FILE`: every result is appended to FILE from now on; `\\o` alone: back to
        the terminal."""
        if self.output is not None:
            self.output.close()
            self.output = None
        if not target:
            self.session.stderr.write("Results go to the terminal.\n")
            return 0
        path = target_file(target, "\\o")
        self.output = open_file(path, append=True)
        self.session.stderr.write(f"Results go to {shown(path)} (\\o alone: back to the terminal).\n")
        return 0

    def confirm(self, question: str) -> bool:
        """The runner asks before a destructive command; only "y" or "yes" goes ahead."""
        try:
            answer = self._confirm_session.prompt(f"{question} [y/N] ")
        except (KeyboardInterrupt, EOFError):
            return False
        return answer.strip().lower() in ("y", "yes")

    # -- keeping the completer fresh ----------------------------------------------------------

    def _watch(self) -> None:
        last_refresh = time.monotonic()
        refreshing = False
        while not self._stop.wait(self.poll_s):
            if not self.session.connected:
                continue
            conn = self.session.conn
            if time.monotonic() - last_refresh >= self.refresh_every_s:
                last_refresh = time.monotonic()
                conn.refresh_in_background()
            changed = self._sync_completer()
            if changed or conn.refreshing != refreshing:
                refreshing = conn.refreshing
                self._invalidate()

    def _sync_completer(self) -> bool:
        """Swap in a completer for the current snapshot if it changed; True when it did."""
        with self._swap_lock:
            snapshot = self._snapshot()
            if snapshot is self.completer.snapshot:
                return False
            self.completer = self._build_completer(snapshot)
            # The snapshot and its index live until the next refresh: out of the collector's
            # full passes, which would otherwise walk a million topics in the middle of a keystroke.
            gc.freeze()
            return True

    def _build_completer(self, snapshot: ClusterSnapshot) -> KafkaCompleter:
        return KafkaCompleter(self.registry, snapshot, clusters=_cluster_names(),
                              overrides=self.overrides, context_topic=lambda: self.session.topic,
                              acls=self.session.acl_names)

    def overrides(self, entity_type: str, name: str) -> list[str] | None:
        """An entity's config overrides for `--delete-config` completion: read once, on the first
        Tab that needs them, and kept for `overrides_keep_s` or until a command runs (which may
        change them). None when they cannot be read: completion then offers every key."""
        from kafka_shell.admin import configs
        key = (entity_type, name)
        kept = self._overrides.get(key)
        if kept is not None and time.monotonic() - kept[0] < self.overrides_keep_s:
            return kept[1]
        try:
            keys: list[str] | None = configs.overrides(self.session.conn, entity_type, name)
        except Exception:  # noqa: BLE001 - completion must not fail; the command will say what is wrong
            keys = None
        self._overrides[key] = (time.monotonic(), keys)
        return keys

    def _invalidate(self) -> None:
        app = self.prompt_session.app
        if app.is_running:
            app.invalidate()


def _continuation(width: int, line_number: int, wrap_count: int) -> StyleAndTextTuples:
    """What precedes a continuation line (after `\\` or in an open quote): dots as wide as the
    prompt, like pgcli. A long line that only wraps on screen goes on under blanks."""
    if wrap_count > 0:
        return [("class:continuation", " " * width)]
    return [("class:continuation", "." * (width - 1) + " ")]


def _cluster_names() -> list[str]:
    """Named clusters for `use-cluster` completion; a broken clusters.json only loses them."""
    from kafka_shell.connection import clusters
    try:
        return list(clusters.load())
    except Exception:  # noqa: BLE001 - the clusters command reports what is wrong with the file
        return []
