"""The REPL's pager: results taller than the terminal go through `$PAGER` (default `less -SRXF`),
as pgcli and mycli do. Only the REPL pages (see runner._view); one-shot, replay and output that
is not a terminal never do.
"""

from __future__ import annotations

import os
import subprocess

DEFAULT_PAGER = "less -SRXF"   # chop long lines, keep colours, leave the text on screen, quit if it fits
NOT_FOUND = 127                # the shell's exit code for a command it cannot find


def page(text: str) -> bool:
    """Show `text` through the pager; False when the pager could not run (the caller prints it)."""
    command = os.environ.get("PAGER", "").strip() or DEFAULT_PAGER
    env = os.environ if "LESS" in os.environ else {**os.environ, "LESS": "SRXF"}
    try:
        # Through the shell, as git and pydoc run $PAGER: it may carry options or be a script.
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env,
                                encoding="utf-8", errors="replace")
    except OSError:
        return False
    assert proc.stdin is not None
    try:
        proc.stdin.write(text)
        proc.stdin.close()
    except (BrokenPipeError, OSError):   # the user quit before reading it all
        pass
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:        # Ctrl-C belongs to the pager (less uses it); wait on
            continue
    return code != NOT_FOUND
