"""docs/tutorial.md replays as it reads: every `kafka> ` line of the page runs in one shell on a
fresh embedded sandbox, and prints what the page shows under it (tests/tutorial.py compares;
`python -m tests.tutorial` rewrites the page from a run)."""

from __future__ import annotations

from kafka_shell.sandbox.server import Sandbox
from tests import tutorial


def test_the_tutorial_shows_what_the_shell_prints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / ".data"))
    steps = tutorial.steps(tutorial.PAGE.read_text())
    assert len(steps) > 30 and steps[0].command == tutorial.START
    commands = {s.command.split()[0] for s in steps}
    for needed in ("create-topic", "describe-topic", "consume", "describe-group", "unclean-recovery", "watch",
                   "reassign-partitions", "snapshot", "analyze"):
        assert needed in commands, f"the tutorial no longer shows {needed}"
    with Sandbox(brokers=3) as sandbox:
        printed = tutorial.replay(steps, sandbox, str(tmp_path))
    drifted = [f"docs/tutorial.md:{s.at}: {s.command}\n  page:  {s.shown}\n  shell: {now}"
               for s, now in zip(steps, printed) if not tutorial.matches(s.shown, now, str(tmp_path), s.command)]
    assert not drifted, "the tutorial drifted from the shell (python -m tests.tutorial rewrites it):\n" + \
        "\n".join(drifted)
