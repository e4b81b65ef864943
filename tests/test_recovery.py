"""unclean-recovery (KAFKA-20098) against a real sandbox, in both of its paths: the cluster's
GetReplicaLogInfo and designated elections (a sandbox started with the seeds' APIs), and stock
Kafka's way (ListOffsets replica id -2, a reorder-only reassignment and an unclean election) on a
sandbox that lists only what Apache Kafka lists."""

from __future__ import annotations

import dataclasses
import io
import json
import signal
import subprocess

import pytest

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.face.runner import run_line
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.handlers import replica_log_info
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target
from tests.conftest import BOTH_MODES, KRAFT_MODE
from tests.sandbox.wire import create, produce
from tests.test_oneshot import SHELL, assert_one_line_error, run, shell
from tests.output import json_rows, json_tables

pytestmark = BOTH_MODES  # elections and reassignments, in KRaft and in ZooKeeper mode

RECOVER = "unclean-recovery --all-offline-partitions --automated-recovery --yes"


@pytest.fixture(params=["designated", "stock"])
def path(request) -> str:
    """Which way the cluster offers: KAFKA-20098's RPCs, or only what Apache Kafka has."""
    return request.param


@pytest.fixture
def sandbox(request, sandbox_mode):
    """This module's cluster: with the seeds' APIs (the designated path) unless the test asks for
    the stock path (`path`), where it lists only what Apache Kafka lists."""
    path = request.getfixturevalue("path") if "path" in request.fixturenames else "designated"
    with Sandbox(brokers=3, mode=sandbox_mode, seed_apis=path == "designated") as s:
        yield s


def partition(sandbox, topic: str = "t", index: int = 0):
    return sandbox.call(lambda: _copy(sandbox.cluster.partition(topic, index)))


def _copy(p) -> dict:
    return {"leader": p.leader, "replicas": list(p.replicas), "hw": p.high_watermark, "leo": dict(p.leo)}


def leader(admin, topic: str = "t", index: int = 0) -> int:
    return admin.list_topics(topic, timeout=5).topics[topic].partitions[index].leader


def diverged(sandbox) -> None:
    """t-0 on [1, 3, 2] (unclean.leader.election.enable=false): 10 records on all three; 3
    stops; 5 more on 1 and 2; 2 stops; 3 more on 1; 1 stops (the whole ISR is gone); 3 and 2
    come back out of sync holding 10 and 15 records. Kafka's unclean election would pick 3,
    the first live replica: the longest log is 2's."""
    create(sandbox, "t", [[1, 3, 2]], **{"unclean.leader.election.enable": "false"})
    produce(sandbox, "t", 0, 10, 20)
    sandbox.stop_broker(3)
    produce(sandbox, "t", 0, 5, 20)
    sandbox.stop_broker(2)
    produce(sandbox, "t", 0, 3, 20)
    sandbox.stop_broker(1)  # kill -9 of the last ISR member
    sandbox.start_broker(3)
    sandbox.start_broker(2)


def test_the_seed_system_test(sandbox, path, admin):
    diverged(sandbox)
    assert leader(admin) == -1
    assert partition(sandbox)["leo"] == {1: 18, 2: 15, 3: 10}
    p = run(sandbox, RECOVER + " --show-replica-info", "-o", "json")
    assert p.returncode == 0, p.stderr
    replicas, results = json_tables(p.stdout).values()
    chosen = {r["replica"]: r for r in replicas}
    assert chosen[2]["chosen"] is True and chosen[2]["log_end_offset"] == 15 and chosen[2]["gap"] == 0
    assert chosen[3]["log_end_offset"] == 10 and chosen[3]["gap"] == 5 and chosen[3]["chosen"] is False
    assert chosen[1]["state"] == "fenced" and chosen[1]["error"] == "broker is not live"
    assert results == [{"topic": "t", "partition": 0, "result": "elected", "leader": 2, "error": None}]
    assert leader(admin) == 2
    after = partition(sandbox)
    assert after["hw"] == 15 and after["replicas"] == [1, 3, 2]  # stock path: the order is restored
    again = run(sandbox, RECOVER)  # running it twice is safe
    assert again.returncode == 0 and "No offline partition to recover." in again.stderr
    assert partition(sandbox) == after


@KRAFT_MODE
@pytest.mark.parametrize("path", ["stock"], indirect=True)
def test_stock_path_says_the_epochs_are_not_the_last_records(sandbox, path, admin):
    diverged(sandbox)
    p = run(sandbox, "unclean-recovery --all-offline-partitions --show-replica-info")
    assert p.returncode == 0, p.stderr
    assert "they are each broker's current epoch, so replicas are compared by log length" in p.stderr
    assert leader(admin) == -1  # nothing elected without --automated-recovery


@KRAFT_MODE
def test_a_replica_that_never_answers_is_no_candidate(sandbox, admin):
    diverged(sandbox)
    sandbox.delay(2, 1500)  # the longest log's broker answers too late
    b3 = sandbox.cluster.brokers[3]  # bootstrap from a broker that answers at once
    p = shell("--bootstrap-server", f"{b3.host}:{b3.port}", "-o", "json", "--command",
              "unclean-recovery --all-offline-partitions --show-replica-info "
              "--recovery-duration-ms 400 --automated-recovery --yes")
    assert p.returncode == 0, p.stderr
    replicas, results = json_tables(p.stdout).values()
    row = {r["replica"]: r for r in replicas}
    assert row[2]["state"] == "unreachable" and row[2]["error"] == "no answer within 400 ms"
    assert row[3]["chosen"] is True
    assert results[0]["result"] == "elected" and results[0]["leader"] == 3


def offline_topic(sandbox, name: str, count: int) -> None:
    """`count` partitions on [1, 2], offline: 1, the last ISR member, down; 2 live, out of sync."""
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, name, count, 2, [[1, 2]] * count, {})
    sandbox.stop_broker(2)
    sandbox.stop_broker(1)
    sandbox.start_broker(2)


@KRAFT_MODE
def test_log_info_is_asked_1000_partitions_a_request_following_has_more_data(sandbox, monkeypatch):
    offline_topic(sandbox, "big", 2500)
    line = "unclean-recovery --all-offline-partitions --show-replica-info"
    p = run(sandbox, line, "--debug", "-o", "json")
    assert p.returncode == 0, p.stderr
    sent = [ln for ln in p.stderr.splitlines() if ln.startswith("debug: GetReplicaLogInfo request")]
    assert sent == [f"debug: GetReplicaLogInfo request to broker 2: {n} partition(s)" for n in (1000, 1000, 500)]
    rows = json_rows(p.stdout)
    assert len(rows) == 5000 and sum(r["chosen"] is True for r in rows) == 2500
    # A broker that serves fewer partitions a request says HasMoreData: the rest is asked again.
    monkeypatch.setattr(replica_log_info, "MAX_PARTITIONS_PER_ELECTION", 400)
    p = run(sandbox, line, "--debug", "-o", "json")
    assert p.returncode == 0, p.stderr
    sent = [ln for ln in p.stderr.splitlines() if ln.startswith("debug: GetReplicaLogInfo request")]
    assert len(sent) == 7  # 1000 (400 answered), 1000 (600 left first), ... until all 2500 are
    rows = json_rows(p.stdout)
    assert sum(r["chosen"] is True for r in rows) == 2500 and not any(r["error"] == "left out of the broker's answer"
                                                                     for r in rows)


def in_process(sandbox, answer) -> tuple[Session, io.StringIO]:
    """A REPL-like session whose confirmation prompt runs `answer(question)`."""
    err = io.StringIO()
    session = Session(target=Target(sandbox.bootstrap), sandbox=sandbox, stdout=io.StringIO(), stderr=err)
    session.interactive = True
    session.confirm = answer
    return session, err


def test_a_partition_back_by_itself_before_the_election_is_already_online(sandbox, path, admin):
    diverged(sandbox)
    questions = []

    def broker_1_comes_back(question: str) -> bool:
        questions.append(question)
        sandbox.start_broker(1)  # the last ISR member: it leads again, cleanly
        return True

    session, err = in_process(sandbox, broker_1_comes_back)
    try:
        code = run_line(session, "unclean-recovery --all-offline-partitions --automated-recovery")
    finally:
        session.close()
    assert code == 0, err.getvalue()
    assert questions == ["Elect t-0 -> 2: answered replicas lose 0 message(s) (1 partition(s) have replicas "
                         "that did not answer and may lose more). Continue?"]
    assert "already online" in session.stdout.getvalue()  # type: ignore[attr-defined]
    assert leader(admin) == 1 and partition(sandbox)["hw"] == 18


def test_a_failed_election_exits_1_with_a_line(sandbox, path, admin):
    diverged(sandbox)

    def chosen_broker_dies(question: str) -> bool:
        sandbox.stop_broker(2)
        return True

    session, err = in_process(sandbox, chosen_broker_dies)
    try:
        code = run_line(session, "unclean-recovery --all-offline-partitions --automated-recovery")
    finally:
        session.close()
    assert code == 1
    lines = [ln for ln in err.getvalue().splitlines() if ln.startswith("Recovery failed for t-0: ")]
    assert len(lines) == 1, err.getvalue()
    if path == "stock":  # the unclean election took the first live replica: say what was lost
        assert ("broker 3 was elected instead of 2 (whose broker stopped in between): 5 message(s) beyond "
                "offset 10 were truncated") in lines[0] and leader(admin) == 3
    else:
        assert leader(admin) == -1


@KRAFT_MODE
def test_refusing_the_confirmation_changes_nothing(sandbox, admin):
    diverged(sandbox)
    session, err = in_process(sandbox, lambda question: False)
    try:
        code = run_line(session, "unclean-recovery --all-offline-partitions --automated-recovery")
    finally:
        session.close()
    assert code == 1 and "Cancelled: nothing was changed." in err.getvalue()
    assert leader(admin) == -1


@KRAFT_MODE
def test_manual_file_feeds_a_designated_election(sandbox, admin, tmp_path):
    diverged(sandbox)
    out = tmp_path / "recovery.json"
    p = run(sandbox, f"kafka-unclean-recovery --all-offline-partitions --manual-recovery-output-file {out}")
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text()) == {"partitions": [{"topic": "t", "partition": 0, "designatedLeader": 2}]}
    assert leader(admin) == -1  # only the file
    again = run(sandbox, f"unclean-recovery --all-offline-partitions --manual-recovery-output-file {out}")
    assert_one_line_error(again, 2, f"{out} already exists")
    p = run(sandbox, f"elect-leaders --election-type designated --path-to-json-file {out} --yes")
    assert p.returncode == 0, p.stderr
    assert leader(admin) == 2 and partition(sandbox)["hw"] == 15


@KRAFT_MODE
def test_dry_run_and_the_json_scope(sandbox, path, admin, tmp_path):
    diverged(sandbox)
    create(sandbox, "online", [[2, 3]])
    scope = tmp_path / "parts.json"
    scope.write_text(json.dumps({"partitions": [{"topic": "t", "partitions": [0]},
                                                {"topic": "online", "partitions": [0]}]}))
    p = run(sandbox, f"unclean-recovery --path-to-json-file {scope} --automated-recovery --dry-run")
    assert p.returncode == 0, p.stderr
    assert "online-0 is online (leader 2): nothing to recover." in p.stderr
    assert ("Would elect 2 for t-0 (no answered replica loses messages; replica(s) 1 did not answer: whatever "
            "they hold beyond offset 15 is lost when they come back) (dry run).") in p.stderr.splitlines()
    assert leader(admin) == -1


@KRAFT_MODE
@pytest.mark.parametrize("line, message", [
    ("unclean-recovery --show-replica-info", "needs one of --path-to-json-file or --all-offline-partitions"),
    ("unclean-recovery --all-offline-partitions", "needs at least one of --show-replica-info"),
    ("unclean-recovery --all-offline-partitions --automated-recovery",
     "may truncate logs: add --yes to confirm"),
    ("unclean-recovery --all-offline-partitions --automated-recovery --manual-recovery-output-file x.json --yes",
     "--manual-recovery-output-file"),
    ("unclean-recovery --all-offline-partitions --path-to-json-file x.json --show-replica-info",
     "--path-to-json-file"),
])
def test_bad_usage_is_one_line_and_changes_nothing(sandbox, admin, line, message):
    diverged(sandbox)
    p = run(sandbox, line)
    assert_one_line_error(p, 2, message)
    assert leader(admin) == -1


@KRAFT_MODE
def test_no_candidate_fails_the_run(sandbox, admin):
    diverged(sandbox)
    sandbox.delay(3, 1500)  # live, but answers too late
    sandbox.fail(2, "GetReplicaLogInfo", "KAFKA_STORAGE_ERROR")  # live, its log directory failed
    b1 = sandbox.cluster.brokers[2]
    p = shell("--bootstrap-server", f"{b1.host}:{b1.port}", "--command", RECOVER + " --recovery-duration-ms 300")
    assert p.returncode == 1
    assert ("No candidate for t-0: no live replica answered without error within 300 ms (replica 1: broker is "
            "not live; replica 3: no answer within 300 ms; replica 2: KAFKA_STORAGE_ERROR).") in p.stderr.splitlines()
    sandbox.heal()
    assert leader(admin) == -1


@KRAFT_MODE
def test_ctrl_c_stops_after_the_batch_in_flight(sandbox, admin):
    offline_topic(sandbox, "big", 2500)
    sandbox.delay(sandbox.active_controller, 600)  # each election batch takes a while
    proc = subprocess.Popen([*SHELL, "--bootstrap-server", sandbox.bootstrap, "--debug", "--command", RECOVER],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("debug: ElectLeaders request 1/"):
            proc.send_signal(signal.SIGINT)
            break
    out, rest = proc.communicate(timeout=60)
    err = "".join(seen) + rest
    assert proc.returncode == 1, err
    assert "Stopped by a signal after the batch in flight: 1500 partition(s) were not attempted" in err
    led = sandbox.call(lambda: sum(p.leader >= 0 for p in sandbox.cluster.topics["big"].partitions))
    assert led == 1000
    sandbox.heal()
    p = run(sandbox, RECOVER)  # the same command finishes the job
    assert p.returncode == 0, p.stderr
    assert sandbox.call(lambda: all(p.leader == 2 for p in sandbox.cluster.topics["big"].partitions))


@KRAFT_MODE
def test_the_repl_context_topic_limits_all_offline_partitions(sandbox, admin):
    create(sandbox, "u", [[1, 2]])
    diverged(sandbox)  # u-0 goes offline too
    session, err = in_process(sandbox, lambda question: True)
    session.topic = "u"
    try:
        code = run_line(session, "unclean-recovery --all-offline-partitions --show-replica-info -o json")
    finally:
        session.close()
    assert code == 0, err.getvalue()
    rows = json_rows(session.stdout.getvalue())  # type: ignore[attr-defined]
    assert {(r["topic"], r["replica"], r["chosen"]) for r in rows} == {("u", 1, False), ("u", 2, True)}
    assert leader(admin, "u") == -1 and leader(admin) == -1


@pytest.mark.parametrize("path", ["designated", "stock"], indirect=True)
@KRAFT_MODE
def test_the_candidate_rule(sandbox, path):
    """Highest leader epoch first (where the epochs are the last records', i.e. with
    GetReplicaLogInfo), then the longest log; ties to the earlier replica of the assignment."""
    create(sandbox, "t", [[1, 3, 2]])
    create(sandbox, "tie", [[1, 3, 2]])
    for b in (2, 3, 1):
        sandbox.stop_broker(b)
    sandbox.start_broker(3)
    sandbox.start_broker(2)
    sandbox.set_log_end_offset("t", 0, 3, 10, epoch=5)
    sandbox.set_log_end_offset("t", 0, 2, 15, epoch=3)
    sandbox.set_log_end_offset("tie", 0, 3, 7, epoch=2)
    sandbox.set_log_end_offset("tie", 0, 2, 7, epoch=2)
    p = run(sandbox, "unclean-recovery --all-offline-partitions --show-replica-info", "-o", "json")
    assert p.returncode == 0, p.stderr
    chosen = {r["topic"]: r["replica"] for r in json_rows(p.stdout) if r["chosen"] is True}
    assert chosen == {"t": 3 if path == "designated" else 2, "tie": 3}


@KRAFT_MODE
@pytest.mark.parametrize("path", ["stock"], indirect=True)
def test_a_cluster_with_neither_path_is_refused_before_anything_changes(sandbox, path, admin, monkeypatch):
    diverged(sandbox)
    list_offsets = sandbox.handlers[ApiKey.LIST_OFFSETS]
    monkeypatch.setitem(sandbox.handlers, ApiKey.LIST_OFFSETS, dataclasses.replace(list_offsets, versions=range(0, 4)))
    p = run(sandbox, RECOVER)
    assert_one_line_error(p, 1, "this cluster has neither; nothing was done")
    assert leader(admin) == -1
