"""broker-ids (KIP-426): missing ids, the host -> id mapping topic, and the KIP's procedure for
a broker starting without an id, run as a real process against a sandbox."""

from __future__ import annotations

import json

from tests.conftest import BOTH_MODES
from kafka_shell.codes import ApiKey
from tests.sandbox.wire import create, request
from tests.test_oneshot import assert_one_line_error, run

pytestmark = BOTH_MODES


def tables(p) -> dict:
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_missing_names_a_stopped_broker_and_what_its_partitions_lost(sandbox):
    create(sandbox, "t", [[1, 2, 3], [2, 3, 1], [3, 1, 2]], **{"min.insync.replicas": "3"})
    create(sandbox, "u", [[1, 2]])   # names no lost id: not listed
    assert tables(run(sandbox, "broker-ids missing -o json")) == {"missing": [], "partitions": []}
    sandbox.stop_broker(3)
    p = run(sandbox, "broker-ids missing -o json")
    got = tables(p)
    assert got["missing"] == [{"BrokerId": 3, "State": "fenced", "LastHost": "127.0.0.1", "Partitions": 3,
                               "UnderReplicated": 3, "UnderMinIsr": 3, "Offline": 0}]
    assert got["partitions"] == [{"BrokerId": 3, "Topic": "t", "Partitions": [0, 1, 2], "UnderReplicated": 3,
                                  "UnderMinIsr": 3, "Offline": 0}]
    assert "Missing broker id(s): 3." in p.stderr


def unregister(sandbox, broker_id: int) -> None:
    """UnregisterBroker, sent where the controller serves it (a KRaft broker forwards it)."""
    to = sandbox.active_controller if sandbox.mode == "zk" else 1
    assert request(sandbox, to, ApiKey.UNREGISTER_BROKER, {"broker_id": broker_id})["error_code"] == 0


def test_missing_counts_offline_partitions_and_unregistered_ids(sandbox):
    create(sandbox, "solo", [[2]])
    create(sandbox, "pair", [[1, 3]])
    sandbox.stop_broker(2)
    sandbox.stop_broker(3)
    unregister(sandbox, 3)
    got = tables(run(sandbox, "broker-ids missing -o json"))
    by_id = {r["BrokerId"]: r for r in got["missing"]}
    assert by_id[2]["Offline"] == 1 and by_id[2]["Partitions"] == 1
    assert by_id[3] == {"BrokerId": 3, "State": "not registered", "LastHost": None, "Partitions": 1,
                        "UnderReplicated": 1, "UnderMinIsr": 0, "Offline": 0}


def test_missing_csv_and_table(sandbox):
    create(sandbox, "t", [[1, 3]])
    sandbox.stop_broker(3)
    p = run(sandbox, "broker-ids missing -o csv")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[:2] == ["BrokerId,State,LastHost,Partitions,UnderReplicated,UnderMinIsr,Offline",
                                         "3,fenced,127.0.0.1,1,1,0,0"]
    p = run(sandbox, "broker-ids missing")
    assert p.returncode == 0 and "fenced" in p.stdout.splitlines()[2]


def test_bad_options_are_one_line(sandbox):
    assert_one_line_error(run(sandbox, "broker-ids missing --host h"), 2, "--host is for broker-ids suggest")
    assert_one_line_error(run(sandbox, "broker-ids suggest"), 2, "needs --host")
    assert_one_line_error(run(sandbox, "broker-ids hosts --yes"), 2, "record and gc")
