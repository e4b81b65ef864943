"""docs/runbook-controller-replacement.md replays as it reads (tests/runbook.py): remove the failed
controller, format and start a new one, add it, each command's output as the page shows it, on a
sandbox with a dynamic quorum reached through --bootstrap-controller alone. The same steps run on
real Kafka 4.4 in tests/real/test_cluster_tools_real.py."""

from __future__ import annotations

from tests import runbook, tutorial


def test_the_runbook_shows_what_the_shell_prints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path / ".data"))
    with runbook.cluster() as sandbox:
        steps, printed = runbook.replay(sandbox, str(tmp_path))
        voters = sorted(c["id"] for c in sandbox.status()["controllers"] if c["voter"])
    commands = [s.command.split()[0] for s in steps]
    for needed in ("remove-controller", "add-controller", "describe-quorum"):
        assert needed in commands, f"the runbook no longer shows {needed}"
    assert voters == [100, 101, runbook.NEW_CONTROLLER]
    drifted = [f"{runbook.PAGE.name}:{s.at}: {s.command}\n  page:  {s.shown}\n  shell: {now}"
               for s, now in zip(steps, printed) if not tutorial.matches(s.shown, now, str(tmp_path))]
    assert not drifted, "the runbook drifted from the shell (python -m tests.runbook rewrites it):\n" + "\n".join(drifted)
