"""The bottom toolbar: cluster, controller, brokers up/total, context topic, cache state."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from collections.abc import Callable

from prompt_toolkit.formatted_text import StyleAndTextTuples

from kafka_shell.connection.metadata import EMPTY

if TYPE_CHECKING:
    from kafka_shell.face.repl.app import Repl


def create_toolbar(repl: Repl) -> Callable[[], StyleAndTextTuples]:
    # Metadata lists live brokers only: remember every broker seen so one that went down still
    # counts in the total.
    seen: set[int] = set()

    def toolbar() -> StyleAndTextTuples:
        session = repl.session
        conn = session.conn if session.connected else None
        snap = conn.snapshot if conn is not None else EMPTY
        seen.update(snap.brokers)
        up, total = len(snap.brokers), len(seen)
        controller = str(snap.controller_id) if snap.controller_id >= 0 else "none"
        unreachable = conn.unreachable_since if conn is not None else None
        if unreachable is not None:
            cache = f"unreachable since {time.strftime('%H:%M:%S', time.localtime(unreachable))}"
        elif conn is not None and conn.refreshing:
            cache = "refreshing..."
        elif snap.taken_at:
            # A clock time, not an age: it stays true between redraws.
            cache = f"metadata of {time.strftime('%H:%M:%S', time.localtime(snap.taken_at))}"
        else:
            cache = "no metadata"
        value, alarm = "class:bottom-toolbar.value", "class:bottom-toolbar.alarm"
        if unreachable is not None:  # the last good counts would be false now
            controller, brokers = "?", f"?/{total}"
        else:
            brokers = f"{up}/{total}"
        fields = [("cluster", repl.cluster_name(), value),
                  ("controller", controller, alarm if controller in ("none", "?") else value),
                  ("brokers", brokers, alarm if unreachable is not None or up < total else value),
                  ("topic", session.topic or "-", value)]
        out: StyleAndTextTuples = []
        for key, text, style in fields:
            out += [("class:bottom-toolbar.key", f" {key}: "), (style, text),
                    ("class:bottom-toolbar", " ")]
        out.append(("class:bottom-toolbar.alarm" if unreachable is not None else "class:bottom-toolbar.state",
                    f" {cache} "))
        return out

    return toolbar
