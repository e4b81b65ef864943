"""The fault matrix on real Apache Kafka 4.4 (tests/fault_matrix.py): the rows marked `real`
crossed with the faults a real cluster can be given, one test per cell. Each fault is healed, and
the partitions led as laid out again, before the next starts; every stopped JVM is continued in
a `finally`.

On kafka4 (three brokers; broker 3 leads the last partition of the scene's topics):
  healthy             nothing: every answer whole (the shell against Kafka's own timing)
  broker-stopped      broker 3 killed (kill -9), once the controller fenced it
  broker-slow         broker 3 stopped and continued over and over (SIGSTOP 0.6 s, SIGCONT 0.3 s:
                      a JVM in long GC pauses, still registered), as long as the cells run
  bootstrap-hung      broker 1, the first bootstrap address, stopped (SIGSTOP: its port accepts
                      and nothing answers), once the controller fenced it
  bootstrap-refused   a closed port first in the bootstrap list
On kafka4_quorum (three controllers, two brokers):
  controller-hung     the active controller stopped (SIGSTOP), once another voter took over
  controller-stopped  the active controller killed (kill -9), once another voter took over
"""

from __future__ import annotations

import json
import os
import signal
import threading
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests import fault_matrix as fm
from tests.fault_matrix import ROWS, Scene
from tests.real_kafka import RealKafka

pytestmark = [pytest.mark.faults, pytest.mark.real_kafka]

FIRST, FAR = 1, 3          # kafka4: the first bootstrap broker; the broker the broker faults make sick
PAUSE_S, RUN_S = 0.6, 0.3  # broker-slow's cycle
SETTLE_S = 90.0            # how long Kafka may take to fence a broker or elect a controller
BROKER_FAULTS = ("healthy", "broker-stopped", "broker-slow", "bootstrap-hung", "bootstrap-refused")
QUORUM_FAULTS = ("controller-hung", "controller-stopped")
REAL_ROWS = sorted(c for c, row in ROWS.items() if row.real)
ALL_CELLS = [(f, c) for f in (*BROKER_FAULTS, *QUORUM_FAULTS) for c in REAL_ROWS]
# The suite's run: each of DEFAULT_FAULTS with every SPREAD-th row (KAFKA_SHELL_FULL_MATRIX=1:
# every cell).
SPREAD = 3
# The faults of the suite's run: a stopped broker, a hung one (SIGSTOP) first in the bootstrap
# list, and a stopped controller, the ones a real cluster meets most (the sandbox's selection has
# every fault; slow nodes and a hung controller wait longest on real Kafka, so they run in the
# full matrix).
DEFAULT_FAULTS = ("healthy", "broker-stopped", "bootstrap-hung", "bootstrap-refused", "controller-stopped")
# Cells that fail and are not mended yet, left out of the suite's selection (the full matrix runs
# them): mend it, then remove the entry.
LEFT_OUT: dict[tuple[str, str], str] = {}
CELLS = fm.chosen_cells(ALL_CELLS, SPREAD, every_healthy=False, left_out=LEFT_OUT, faults=DEFAULT_FAULTS)


def test_enough_cells_on_real_kafka():
    default = fm.default_cells(ALL_CELLS, SPREAD, every_healthy=False, left_out=LEFT_OUT, faults=DEFAULT_FAULTS)
    assert len(default) >= 40
    for fault in DEFAULT_FAULTS:
        assert sum(1 for f, _ in default if f == fault) >= 5, fault
    assert {c for _, c in default} == set(REAL_ROWS)


class RealMatrix(fm.Matrix):
    def __init__(self, cluster: RealKafka, workdir: Path, faults: tuple[str, ...], assignment: list[list[int]]):
        self.cluster = cluster
        self.sick: set[int] = set()   # brokers a fault stopped or killed: the harness's own reads avoid them
        scene = Scene(cluster.bootstrap, workdir, assignment=assignment)
        super().__init__(scene, workdir, [(f, c) for f, c in CELLS if f in faults])
        scene.seed(every_group_type=False)

    def active_controller(self) -> int:
        well = ",".join(f"127.0.0.1:{b.port}" for b in self.cluster.brokers if b.node_id not in self.sick)
        code, out, err = self.scene.shell("describe-controller -o json", bootstrap=well)
        assert code == 0, err
        return json.loads(out)["controller"][0]["id"]

    def addresses(self) -> dict[int, str]:
        return {n.node_id: f"127.0.0.1:{n.port}" for n in self.cluster.nodes.values() if n.roles != "zookeeper"}

    def live_brokers(self, via: int) -> set[int]:
        try:
            return set(self.scene.live_brokers(self.addresses()[via]))
        except Exception:  # noqa: BLE001 - settling
            return set()

    def sick_node(self, fault: str) -> tuple[int | None, bool]:
        if fault in ("broker-stopped", "broker-slow"):
            return FAR, fault == "broker-stopped"
        if fault == "bootstrap-hung":
            return FIRST, True
        if fault.startswith("controller-"):
            return self.active_controller(), True
        return None, False

    @contextmanager
    def fault(self, name: str):
        with ExitStack() as stack:
            first = None
            if name == "broker-stopped":
                self.sick.add(FAR)
                self.cluster.kill(FAR)
                fm.wait_until("broker 3 fenced", lambda: self.live_brokers(FIRST) == {1, 2}, SETTLE_S)
            elif name == "broker-slow":
                stack.enter_context(paused_over_and_over(self.cluster.nodes[FAR].proc.pid))
            elif name == "bootstrap-hung":
                self.sick.add(FIRST)
                stack.enter_context(stopped(self.cluster.nodes[FIRST].proc.pid))
                fm.wait_until("broker 1 fenced", lambda: self.live_brokers(2) == {2, 3}, SETTLE_S)
            elif name == "bootstrap-refused":
                first = stack.enter_context(fm.refused_address())
            elif name.startswith("controller-"):
                old = self.active_controller()
                node = self.cluster.nodes[old]
                if name == "controller-hung":
                    stack.enter_context(stopped(node.proc.pid))
                else:
                    self.cluster.kill(old)
                fm.wait_until("another active controller", lambda: self._controller_other_than(old), SETTLE_S)
            yield first

    def _controller_other_than(self, old: int) -> bool:
        try:
            return self.active_controller() != old
        except AssertionError:
            return False

    def restore(self) -> None:
        self.cluster.restore()   # starts what was killed (a stopped JVM was continued already)
        self.sick.clear()
        topic = fm.NAMES["topic"]
        want = [a[0] for a in self.scene.assignment]

        def settled() -> bool:
            code, _, _ = self.scene.shell("elect-leaders --election-type preferred --all-topic-partitions --yes")
            return code == 0 and self.scene.leaders(topic) == want
        fm.wait_until("the scene's leaders as laid out", settled, SETTLE_S)

    def close(self) -> None:
        """What the matrix made on the shared cluster goes (other tests share it)."""
        self.cluster.restore()
        names = [t for t in self.scene.admin.list_topics(timeout=30).topics if t.startswith("mx")]
        if names:
            for f in self.scene.admin.delete_topics(names, operation_timeout=30).values():
                f.result(60)
        groups = [g for g in self.scene.listed_groups() if g.startswith("mx")]
        if groups:
            self.scene.shell(f"delete-group {' '.join(groups)} --yes")


@contextmanager
def stopped(pid: int):
    """The JVM stopped (SIGSTOP: its sockets accept and nothing answers), continued afterwards."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextmanager
def paused_over_and_over(pid: int):
    """A JVM in long GC pauses: stopped PAUSE_S, running RUN_S, again and again (it still
    heartbeats often enough to stay registered), continued for good afterwards."""
    done = threading.Event()

    def cycle() -> None:
        while not done.is_set():
            os.kill(pid, signal.SIGSTOP)
            done.wait(PAUSE_S)
            os.kill(pid, signal.SIGCONT)
            done.wait(RUN_S)

    thread = threading.Thread(target=cycle, name="broker-slow", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(10)
        os.kill(pid, signal.SIGCONT)


@pytest.fixture(scope="module")
def kafka4_matrix(kafka4, tmp_path_factory):
    with fm.open_matrix(lambda d: RealMatrix(kafka4, d, BROKER_FAULTS, fm.THREE_BROKERS),
                        tmp_path_factory.mktemp("fault-matrix-kafka4")) as m:
        yield m


@pytest.fixture(scope="module")
def quorum_matrix(kafka4_quorum, tmp_path_factory):
    with fm.open_matrix(lambda d: RealMatrix(kafka4_quorum, d, QUORUM_FAULTS, fm.TWO_BROKERS),
                        tmp_path_factory.mktemp("fault-matrix-quorum")) as m:
        yield m


@pytest.mark.parametrize(("fault", "command"), CELLS, ids=[f"{f}:{c}" for f, c in CELLS])
def test_cell(request, fault, command):
    matrix = request.getfixturevalue("quorum_matrix" if fault in QUORUM_FAULTS else "kafka4_matrix")
    cell, found = matrix.outcome(fault, command)
    assert not found, fm.report(cell, found)


def test_no_jvm_is_left_stopped(kafka4, kafka4_quorum):
    """Every node the matrix stopped runs again (a stopped JVM would stall every later test)."""
    for cluster in (kafka4, kafka4_quorum):
        for node in cluster.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                state = Path(f"/proc/{node.proc.pid}/stat").read_text().split(")")[1].split()[0]
                assert state != "T", f"node {node.node_id} is stopped"
