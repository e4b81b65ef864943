"""Kafka 4.3/4.4's new admin tools (issue 33 item 6, cordoning aside) on the sandbox:
unregister-controller (kafka-cluster unregister-controller) and remove-controller --unregister
(kafka-metadata-quorum remove-controller --unregister), KIP-1312; KIP-1147's option names
(--command-config and --command-property beside the old ones). The same on real Kafka 4.4 in
tests/real/test_fleet_real.py."""

from __future__ import annotations

import pytest

from kafka_shell.sandbox.server import Sandbox
from tests.output import json_tables
from tests.test_cluster_tools import new_controller_config
from tests.test_oneshot import assert_one_line_error, shell


def ok(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json_tables(proc.stdout) if proc.stdout.strip() else {}


@pytest.fixture
def dynamic():
    """Three voters (100-102) of a dynamic quorum and two brokers."""
    with Sandbox(brokers=2, controllers=3, dynamic_quorum=True) as sb:
        yield sb


def both(sb, line: str, *extra: str):
    """A line with the brokers and the controllers given (describe-cluster lists the controllers)."""
    return shell("--bootstrap-server", sb.bootstrap, "--bootstrap-controller", sb.bootstrap_controllers, *extra,
                 "--command", line)


def registered(sb) -> list[int]:
    return [c["id"] for c in ok(both(sb, "describe-cluster", "-o", "json"))["controllers"]]


def test_remove_controller_unregister_then_unregister_controller(dynamic):
    sb = dynamic
    new = sb.add_controller()
    node, directory = new["id"], new["directory_id"]
    assert both(sb, f"add-controller --controller-id {node} --yes").returncode == 0
    assert registered(sb) == [100, 101, 102, node]
    sb.stop_controller(node)   # stopped for good: its registration stays until unregistered
    assert registered(sb) == [100, 101, 102, node]
    line = f"remove-controller --controller-id {node} --controller-directory-id {directory} --unregister"
    assert_one_line_error(both(sb, line), 2, f"and unregister controller {node}", "--yes")
    dry = both(sb, line + " --dry-run")
    assert dry.returncode == 0 and f"Would remove controller {node} (directory {directory}) and unregister it" in dry.stderr
    assert registered(sb) == [100, 101, 102, node]
    p = both(sb, line + " --yes")
    assert p.returncode == 0, p.stderr
    assert f"Removed controller {node} (directory {directory}): voters {{100, 101, 102, {node}}} -> {{100, 101, 102}}." \
        in p.stderr and f"Controller {node} is no longer registered." in p.stderr
    assert registered(sb) == [100, 101, 102]
    assert {c["id"] for c in sb.status()["controllers"] if c["voter"]} == {100, 101, 102}
    # Gone: Kafka's refusal, one line; with --unregister, the hint of Kafka's tool.
    assert_one_line_error(both(sb, f"unregister-controller --id {node} --yes"), 1,
                          f"Controller ID {node} is not currently registered.")
    assert_one_line_error(both(sb, line + " --yes"), 2, "is no voter", f"run unregister-controller --id {node}")
    sb.start_controller(node)   # a controller that starts registers again
    assert registered(sb) == [100, 101, 102, node]


def test_unregister_controller_refusals_and_dry_run(dynamic):
    sb = dynamic
    active = sb.active_controller
    dry = both(sb, f"unregister-controller --id {active} --dry-run")
    assert dry.returncode == 0 and "the active controller: Kafka refuses to unregister it" in dry.stderr
    assert_one_line_error(both(sb, f"unregister-controller --id {active} --yes"), 1,
                          "Controller cannot unregister itself while it is active.")
    voter = next(i for i in (100, 101, 102) if i != active)
    p = both(sb, f"unregister-controller --id {voter}")
    assert_one_line_error(p, 2, f"Unregister controller {voter} (a voter of the quorum", "--unregister does both",
                          "--yes")
    # A running controller registers again at once (Kafka's registration manager sees it gone).
    p = both(sb, f"unregister-controller --id {voter} --yes")
    assert p.returncode == 0 and p.stderr.strip() == f"Controller {voter} is no longer registered.", p.stderr
    assert registered(sb) == [100, 101, 102]
    assert_one_line_error(both(sb, "unregister-controller"), 2, "--id")


def test_a_cluster_without_the_api_says_so_before_anything_changes():
    with Sandbox(brokers=1, kafka_version="3.9") as sb:
        p = shell("--bootstrap-server", sb.bootstrap, "--command", "unregister-controller --id 100 --yes")
        assert_one_line_error(p, 1, "UnregisterController", "not supported by this cluster")
        p = shell("--bootstrap-server", sb.bootstrap, "--command", "remove-controller --controller-id 100 "
                  "--controller-directory-id AAAAAAAAAAAAAAAAAAAAAQ --unregister --yes")
        assert_one_line_error(p, 1, "UnregisterController", "not supported by this cluster")


# -- KIP-1147: --command-config and --command-property everywhere, the older names beside them ----


def test_kip_1147_option_names(sandbox, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("client.id=from-the-file\n")
    base = ("--bootstrap-server", sandbox.bootstrap, "--command", "list-topics", "-o", "json")
    for options in (("--command-config", str(props)), ("--consumer.config", str(props)), ("--producer.config", str(props)),
                    ("--admin.config", str(props)), ("--consumer-config", str(props)), ("--config-file", str(props)),
                    ("--command-property", "client.id=x"), ("--consumer-property", "client.id=x"),
                    ("--producer-property", "client.id=x"), ("-X", "client.id=x")):
        p = shell(*options, *base)
        assert p.returncode == 0 and "topics" in json_tables(p.stdout), (options, p.stderr)
    # Each is read as the one it replaces: a bad property is refused the same way, in one line.
    assert_one_line_error(shell("--command-property", "bogus.key=1", *base), 2, "bogus.key")
    assert_one_line_error(shell("--admin.config", str(tmp_path / "missing.properties"), *base), 2, "missing.properties")
    # Two names of one option are one option given twice, as Kafka's tools refuse them together.
    assert_one_line_error(shell("--consumer.config", str(props), "--command-config", str(props), *base), 2,
                          "--consumer.config and --command-config given twice")
    # The new names are offered (help, completion); the old ones are taken, not offered.
    from kafka_shell.face.completions import bash
    from kafka_shell.face.main import usage_text
    assert "--command-property" in usage_text() and "--consumer.config" in usage_text()
    assert "--command-property" in bash() and "--consumer-property|" in bash()   # passed on to list topics at Tab


def test_add_controller_reads_the_new_controllers_properties_from_command_config(dynamic, tmp_path):
    """kafka-metadata-quorum add-controller reads them from --command-config (KIP-1147's name):
    add-controller takes it beside --config."""
    sb = dynamic
    new, config = new_controller_config(sb, tmp_path)
    for line in (f"add-controller --command-config {config} --dry-run", f"--add-controller --command-config {config} --dry-run"):
        args = ["--command", line] if not line.startswith("--") else line.split()
        p = shell("--bootstrap-controller", sb.bootstrap_controllers, "-o", "json", *args)
        plan = ok(p)["voters"]
        assert plan[-1]["node_id"] == new["id"] and plan[-1]["directory_id"] == new["directory_id"], line
