"""docs/tutorial.md, replayed: its `kafka> ` lines run in order in one shell on a fresh embedded
sandbox (what `kafka-shell --sandbox` starts), and each one's output is compared with the lines
the page shows under it. Values that differ from run to run (ids, times, ports, sizes, the
working directory) are compared as placeholders; a `...` line stands for any lines (at the end:
the first lines are shown; at the start: the last ones).

    .venv/bin/python -m tests.tutorial          # rewrite the page's outputs from a run now

tests/test_tutorial.py checks the page; this module also rewrites it, keeping each output's
`...` where it was.
"""

from __future__ import annotations

import io
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
PROMPT = "kafka> "
START = "$ kafka-shell --sandbox"
WORKDIR = "/home/you/kafka-tutorial"   # where the page says it runs
ELLIPSIS = "..."

# Run-to-run values, each replaced by a placeholder before lines are compared.
VOLATILE = [
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<TIME>"),
    (re.compile(r"\b\d{8}T\d{6}(\.\d+)?Z"), "<TIME>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<TIME>"),
    (re.compile(r"\b1[6-9]\d{11}\b"), "<TIME>"),               # epoch milliseconds
    (re.compile(r"127\.0\.0\.1:\d+"), "<ADDRESS>"),
    (re.compile(r"(?<![\w-])[A-Za-z0-9_-]{22}(?![\w-])"), "<ID>"),   # Kafka's base64 ids
    (re.compile(r"\b\d+(\.\d+)? (B|KiB|MiB|GiB)\b"), "<SIZE>"),
    (re.compile(r"\b\d+\.\d+( s)?\b"), "<SECONDS>"),
    (re.compile(r"\b\d+ (ms|s|min|h) ago\b"), "<AGO>"),
    (re.compile(r"-{2,}"), "--"),                                   # a table's rule, as wide as its column
]


@dataclass
class Step:
    command: str                      # the line after the prompt (START: the sandbox's greeting)
    shown: list[str] = field(default_factory=list)   # the output lines the page shows
    at: int = 0                       # the page's line number of the command


def steps(text: str, exact: tuple[str, ...] = (START,)) -> list[Step]:
    """The page's commands with the output shown under each, in order (code blocks only): the
    `kafka> ` lines, and the lines in `exact` (the start, a runbook's actions)."""
    out: list[Step] = []
    in_block = False
    current: Step | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_block = not in_block
            current = None
            continue
        if not in_block:
            continue
        if line.startswith(PROMPT) or line in exact:
            current = Step(line[len(PROMPT):] if line.startswith(PROMPT) else line, at=number)
            out.append(current)
        elif current is not None:
            current.shown.append(line)
    return out


def normal(line: str, cwd: str) -> str:
    line = line.replace(cwd, WORKDIR)
    for pattern, placeholder in VOLATILE:
        line = pattern.sub(placeholder, line)
    return " ".join(line.split())


def matches(shown: list[str], printed: list[str], cwd: str, command: str = "") -> bool:
    """The printed lines fit the shown ones: equal after `normal`, `...` standing for any lines.
    A consume's records come from several partitions in whatever order they arrive: its rows
    fit in any order."""
    want = [normal(x, WORKDIR) for x in shown]
    got = [normal(x, cwd) for x in printed]
    if command.startswith("consume") and ELLIPSIS not in want and len(want) == len(got) > 3:
        return want[:2] == got[:2] and want[-1] == got[-1] and sorted(want[2:-1]) == sorted(got[2:-1])
    if ELLIPSIS not in want:
        return want == got
    cut = want.index(ELLIPSIS)
    head, tail = want[:cut], want[cut + 1:]
    return len(got) >= len(head) + len(tail) and got[:len(head)] == head and \
        (not tail or got[-len(tail):] == tail)


def replay(items: list[Step], sandbox, cwd: str, target=None, actions=None) -> list[list[str]]:
    """What the shell prints for each step (stdout and stderr as a terminal shows them). A step
    in `actions` (a line -> what it does to the sandbox) runs that instead; `target`: where the
    shell connects (default: the sandbox's brokers)."""
    from kafka_shell.face.runner import run_line
    from kafka_shell.connection.session import Session, Target
    out = io.StringIO()
    session = Session(target=target or Target(sandbox.bootstrap), sandbox=sandbox, stdout=out, stderr=out)
    printed: list[list[str]] = []
    try:
        for step in items:
            out.seek(0)
            out.truncate()
            if actions and step.command in actions:
                actions[step.command]()
            elif step.command.startswith("$ kafka-shell"):
                out.write(session.conn.greeting() + "\n")
            else:
                run_line(session, step.command)
            printed.append(out.getvalue().splitlines())
    finally:
        session.close()
    return printed


def rewritten(text: str, printed: list[list[str]], cwd: str, exact: tuple[str, ...] = (START,)) -> str:
    """The page with each step's output replaced by what was printed, cut where it had `...`."""
    items = steps(text, exact)
    lines = text.splitlines()
    for step, now in reversed(list(zip(items, printed))):
        now = [line.replace(cwd, WORKDIR) for line in now]
        if ELLIPSIS in step.shown:
            cut = step.shown.index(ELLIPSIS)
            keep_head, keep_tail = cut, len(step.shown) - cut - 1
            now = [*now[:keep_head], ELLIPSIS, *(now[-keep_tail:] if keep_tail else [])]
        start = step.at
        lines[start:start + len(step.shown)] = now
    return "\n".join(lines) + "\n"


def main() -> int:
    import tempfile

    from kafka_shell.sandbox.server import Sandbox
    text = PAGE.read_text()
    with tempfile.TemporaryDirectory() as cwd, Sandbox(brokers=3) as sandbox:
        os.chdir(cwd)
        os.environ["KAFKA_SHELL_DATA_DIR"] = os.path.join(cwd, ".data")
        printed = replay(steps(text), sandbox, cwd)
        PAGE.write_text(rewritten(text, printed, cwd))
    print(f"Wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
