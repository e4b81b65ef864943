"""Debug lines (what --debug shows) without loading `logging` at every start.

`logging` (with the traceback, string and textwrap modules it loads) is a few ms of each one-shot
start, for lines only --debug shows; main imports and configures it under --debug. A line logged
while nothing has imported logging could go nowhere (nothing can have configured a handler, and
Python's last-resort handler prints warnings and worse only), so it is dropped without importing
it; once anything has imported logging (--debug, a test's log capture), lines go to it as usual.
"""

from __future__ import annotations

import sys


class DebugLog:
    """`log = DebugLog("kafka_shell.x")`; `log.debug("...: %s", value)` as `logging.Logger.debug`."""

    def __init__(self, name: str):
        self.name = name

    def debug(self, message: str, *args: object) -> None:
        logging = sys.modules.get("logging")
        if logging is not None:
            logging.getLogger(self.name).debug(message, *args)
