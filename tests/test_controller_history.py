"""controller-history: the controller changes the shell saw, kept per cluster in the data dir."""

from __future__ import annotations

import io

from kafka_shell.face.runner import run_line
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target
from tests.conftest import BOTH_MODES
from tests.test_oneshot import run
from tests.output import json_rows, json_tables

pytestmark = BOTH_MODES


def test_moves_seen_by_commands_are_kept_across_runs(sandbox, tmp_path):
    env = {"KAFKA_SHELL_DATA_DIR": str(tmp_path)}
    first = json_rows(run(sandbox, "controller-history -o json", env=env).stdout)
    assert [(e["from"], e["to"]) for e in first] == [(None, sandbox.active_controller)]
    before = sandbox.active_controller
    sandbox.kill_controller()
    assert run(sandbox, "describe-controller", env=env).returncode == 0   # sees the change
    p = run(sandbox, "controller-history -o json", env=env)
    history = json_rows(p.stdout)
    assert len(history) == 2 and history[1]["from"] == before and history[1]["to"] == sandbox.active_controller
    if sandbox.mode == "kraft":
        assert history[1]["epoch"] == sandbox.controller_epoch
    assert "2 controller observation(s)" in p.stderr


def test_describe_controller_tells_since_when_and_the_voters(sandbox, tmp_path):
    env = {"KAFKA_SHELL_DATA_DIR": str(tmp_path)}
    row = json_rows(run(sandbox, "describe-controller -o json", env=env).stdout)[0]
    # A sandbox without its control endpoint tells no time it took over; this shell's view does.
    assert row["id"] == sandbox.active_controller and row["held_since"] is None and isinstance(row["seen_since"], int)
    again = json_rows(run(sandbox, "describe-controller -o json", env=env).stdout)[0]
    assert again["seen_since"] == row["seen_since"]   # the same uninterrupted hold
    if sandbox.mode == "kraft":
        assert row["voters"] == ["100 (lag 0)"]
    else:
        assert row["voters"] is None


def _in_process(sandbox, line: str) -> dict:
    """`line` in a Session with the embedded sandbox (no subprocess): its json output."""
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(),
                      stderr=io.StringIO())
    try:
        code = run_line(session, line)
    finally:
        session.close()
    assert code == 0, session.stderr.getvalue()  # type: ignore[attr-defined]
    return json_tables(session.stdout.getvalue())  # type: ignore[attr-defined]


def test_an_embedded_sandbox_shows_its_own_record_beside(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_DATA_DIR", str(tmp_path))
    first = sandbox.active_controller
    got = _in_process(sandbox, "controller-history -o json")
    assert [(e["from"], e["to"], e["epoch"]) for e in got["cluster"]] == [(None, first, 1)]
    assert [(e["from"], e["to"]) for e in got["observed"]] == [(None, first)]
    sandbox.kill_controller()
    changes = [(e["from"], e["to"], e["epoch"]) for e in _in_process(sandbox, "controller-history -o json")["cluster"]]
    assert changes == [(None, first, 1), (first, sandbox.active_controller, sandbox.controller_epoch)]
    if sandbox.mode == "kraft":
        # The lone voter stops (no controller, the epoch stays) and comes back with a new epoch.
        sandbox.stop_controller(first)
        sandbox.start_controller(first)
        changes = [(e["from"], e["to"], e["epoch"]) for e in _in_process(sandbox, "controller-history -o json")["cluster"]]
        assert changes[2:] == [(first, None, 2), (None, first, 3)]


def test_a_sandbox_server_shows_its_record_through_the_control_endpoint(sandbox_mode, tmp_path):
    env = {"KAFKA_SHELL_DATA_DIR": str(tmp_path)}
    with Sandbox(brokers=3, mode=sandbox_mode, serve_control=True) as served:
        served.kill_controller()
        p = run(served, "controller-history -o json", env=env)
        assert p.returncode == 0, p.stderr
        got = json_tables(p.stdout)
        assert [e["to"] for e in got["cluster"]] == [got["cluster"][0]["to"], served.active_controller]
        assert got["cluster"][-1]["epoch"] == served.controller_epoch == 2
        assert "2 controller change(s) in the sandbox's own record" in p.stderr
