"""controller-history: the controller changes the shell saw, kept per cluster in the data dir."""

from __future__ import annotations

import json

from tests.conftest import BOTH_MODES
from tests.test_oneshot import run

pytestmark = BOTH_MODES


def test_moves_seen_by_commands_are_kept_across_runs(sandbox, tmp_path):
    env = {"KAFKA_SHELL_DATA_DIR": str(tmp_path)}
    first = json.loads(run(sandbox, "controller-history -o json", env=env).stdout)
    assert [(e["From"], e["To"]) for e in first] == [(None, sandbox.active_controller)]
    before = sandbox.active_controller
    sandbox.kill_controller()
    assert run(sandbox, "describe-controller", env=env).returncode == 0   # sees the change
    p = run(sandbox, "controller-history -o json", env=env)
    history = json.loads(p.stdout)
    assert len(history) == 2 and history[1]["From"] == before and history[1]["To"] == sandbox.active_controller
    if sandbox.mode == "kraft":
        assert history[1]["Epoch"] == sandbox.controller_epoch
    assert "2 controller observation(s)" in p.stderr


def test_describe_controller_tells_since_when_and_the_voters(sandbox, tmp_path):
    env = {"KAFKA_SHELL_DATA_DIR": str(tmp_path)}
    row = json.loads(run(sandbox, "describe-controller -o json", env=env).stdout)[0]
    assert row["Id"] == sandbox.active_controller and row["HeldSince"].endswith("+00:00")
    again = json.loads(run(sandbox, "describe-controller -o json", env=env).stdout)[0]
    assert again["HeldSince"] == row["HeldSince"]   # the same uninterrupted hold
    if sandbox.mode == "kraft":
        assert row["Voters"] == ["100 (lag 0)"]
    else:
        assert row["Voters"] is None
