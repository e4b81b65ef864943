"""Every command ends within its --timeout (plus a little slack) whatever a broker does: silent,
slow, trickling bytes, refusing connections; and the message says which broker did not answer.

The shell runs as a real process; `subprocess.run(timeout=...)` is the bound: a command that
hangs past --timeout + SLACK_S fails the test (this checks that waits are bounded, not speed).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from tests.loopback import LoopbackServer
from tests.test_oneshot import SHELL, assert_one_line_error

TIMEOUT_S = 2
SLACK_S = 2


def bounded(*args: str) -> object:
    import subprocess
    return subprocess.run([*SHELL, "--timeout", str(TIMEOUT_S), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT_S + SLACK_S)


@contextlib.contextmanager
def silent_listener():
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"127.0.0.1:{s.getsockname()[1]}"


class TrickleProxy(LoopbackServer):
    """Forwards to a real broker; after the first `fast` answers it sends what the broker
    answers one byte every `every_s` seconds (a broker that is alive but hopelessly slow)."""

    def __init__(self, target: tuple[str, int], fast: int = 1, every_s: float = 0.5):
        self.target, self.fast, self.every_s = target, fast, every_s
        self.stop = threading.Event()
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        upstream = socket.create_connection(self.target)
        threading.Thread(target=self._pipe, args=(conn, upstream, None), daemon=True).start()
        self._pipe(upstream, conn, self.fast)

    def _pipe(self, src: socket.socket, dst: socket.socket, fast_answers: int | None) -> None:
        seen = 0
        try:
            while not self.stop.is_set():
                data = src.recv(65536)
                if not data:
                    break
                if fast_answers is None or seen < fast_answers:
                    dst.sendall(data)
                    seen += 1  # one recv per answer is close enough for small ApiVersions answers
                    continue
                for i in range(len(data)):
                    if self.stop.is_set():
                        return
                    dst.sendall(data[i:i + 1])
                    time.sleep(self.every_s)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.close()

    def close(self) -> None:
        self.stop.set()
        super().close()


@pytest.mark.parametrize("line", ["list-topics", "describe-cluster", "describe-topic --topic t",
                                  "create-topic --topic t2 --partitions 1"])
def test_silent_broker(line):
    with silent_listener() as address:
        p = bounded("--bootstrap-server", address, "--command", line)
    assert_one_line_error(p, 1, f"Cannot reach any broker of {address} within {TIMEOUT_S} s",
                          f"{address} did not answer ApiVersions in time")


@pytest.mark.parametrize("line", ["list-topics", "describe-cluster"])
def test_refused_port_is_said_at_once(line):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"  # bound, not listening: refused
        p = bounded("--bootstrap-server", address, "--command", line)
    assert_one_line_error(p, 1, "connection refused by " + address)


def test_trickling_broker(sandbox):
    proxy = TrickleProxy(sandbox.address(1))
    try:
        p = bounded("--bootstrap-server", proxy.address, "--command", "list-topics")
    finally:
        proxy.close()
    assert_one_line_error(p, 1, f"{proxy.address} did not answer Metadata in time")


@pytest.mark.parametrize("line, what", [
    ("describe-configs --broker 2", "Broker 2 at {} did not answer"),
    ("alter-configs --broker 2 --add-config log.cleaner.threads=2", "Broker 2 at {} did not answer"),
    ("describe-log-dirs --broker-list 2", "Broker 2 did not answer DescribeLogDirs within 2 s"),
    ("api-versions --broker 2", "Broker 2 at {} did not answer ApiVersions"),
])
def test_slow_broker(sandbox, line, what):
    sandbox.delay(2, 40_000)
    p = bounded("--bootstrap-server", "{}:{}".format(*sandbox.address(1)), "--command", line)
    assert_one_line_error(p, 1, what.format("{}:{}".format(*sandbox.address(2))))
    assert "_TIMED_OUT" not in p.stderr and "Internal error" not in p.stderr


def test_whole_cluster_slow(sandbox):
    for b in (1, 2, 3):
        sandbox.delay(b, 40_000)
    p = bounded("--bootstrap-server", sandbox.bootstrap, "--command", "list-topics")
    assert_one_line_error(p, 1, f"within {TIMEOUT_S} s", "did not answer")


# -- bootstrap: every address tried within one deadline, as librdkafka fails over ----------------


def _listed_first(first: str, sandbox) -> str:
    return f"{first},{sandbox.bootstrap}"


@pytest.mark.parametrize("first", ["hung broker", "silent socket", "refused", "unresolvable"])
def test_a_bad_first_bootstrap_address_costs_nothing_when_another_answers(sandbox, first):
    with silent_listener() as silent, socket.socket() as unbound:
        unbound.bind(("127.0.0.1", 0))
        if first == "hung broker":
            sandbox.delay(1, 60_000)   # broker 1 is listed first in the sandbox's bootstrap
            servers = sandbox.bootstrap
        else:
            bad = {"silent socket": silent, "refused": f"127.0.0.1:{unbound.getsockname()[1]}",
                   "unresolvable": "nosuchhost.invalid:9092"}[first]
            servers = _listed_first(bad, sandbox)
        p = bounded("--bootstrap-server", servers, "--command", "describe-cluster -o jsonl")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    brokers = [line for line in p.stdout.splitlines() if '"table": "brokers"' in line]
    assert len(brokers) == 3


def test_addresses_none_of_which_resolve_fail_at_once():
    # --timeout 60, bounded far below it: no resolving address is waited for.
    import subprocess
    p = subprocess.run([*SHELL, "--timeout", "60", "--bootstrap-server", "nosuchhost.invalid:9092,also.invalid:9093",
                        "--command", "list-topics"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=TIMEOUT_S + SLACK_S)
    assert_one_line_error(p, 1, "Cannot reach any broker of nosuchhost.invalid:9092,also.invalid:9093: ",
                          "nosuchhost.invalid:9092", "also.invalid:9093")
    assert "within" not in p.stderr


def test_the_repl_opens_when_a_later_bootstrap_address_answers(sandbox, tmp_path):
    from tests.test_repl import Terminal
    with silent_listener() as silent:
        term = Terminal(tmp_path, ("--bootstrap-server", _listed_first(silent, sandbox), "--timeout", str(TIMEOUT_S)),
                        timeout=TIMEOUT_S + SLACK_S + 10)
        try:
            assert "Connected to cluster" in term.prompt()
            assert "broker" in term.run("list-brokers", "Role")
        finally:
            term.child.terminate(force=True)


# -- partition leaders: one deadline, one blame -----------------------------------------------


def _leader_of(sandbox, topic: str, partition: int) -> int:
    return sandbox.call(lambda: sandbox.cluster.topics[topic].partitions[partition].leader)


def _keyed(sandbox) -> int:
    """Topic `keyed` (3 partitions, led by brokers 1, 2, 3) with a record in each; its partition 0's leader."""
    from tests.test_oneshot import run
    assert run(sandbox, "create-topic --topic keyed --replica-assignment 1:2:3,2:3:1,3:1:2").returncode == 0
    assert run(sandbox, "produce --topic keyed --partition 0 a; produce --topic keyed --partition 1 b; "
                        "produce --topic keyed --partition 2 c").returncode == 0
    return _leader_of(sandbox, "keyed", 0)


def test_a_read_that_needs_a_slow_leader_names_it_and_gives_the_others(sandbox):
    leader = _keyed(sandbox)
    sandbox.delay(leader, 60_000)
    p = bounded("--bootstrap-server", sandbox.bootstrap, "--command", "get-offsets --topic keyed")
    assert p.returncode == 1, p.stderr
    assert p.stdout.split() == ["keyed:1:1", "keyed:2:1"]
    assert p.stderr.strip() == f"Broker {leader} (leader of keyed-0) did not answer ListOffsets within {TIMEOUT_S} s"


def test_a_deletion_at_a_slow_leader_is_named_and_the_others_are_done(sandbox, tmp_path):
    import json
    leader = _keyed(sandbox)
    plan = tmp_path / "del.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "keyed", "partition": p, "offset": -1} for p in (0, 1, 2)],
                                "version": 1}))
    sandbox.delay(leader, 60_000)
    p = bounded("--bootstrap-server", sandbox.bootstrap, "--command",
                f"delete-records --offset-json-file {plan} --yes -o jsonl")
    assert p.returncode == 1, p.stderr
    rows = {(r["partition"], r["status"]) for r in map(json.loads, p.stdout.splitlines())}
    assert rows == {(0, "Error"), (1, "Successful"), (2, "Successful")}
    assert p.stderr.strip() == (f"Broker {leader} (leader of keyed-0) did not answer DeleteRecords within {TIMEOUT_S} s: "
                                "it may or may not have taken effect (check before retrying)")


def test_a_leader_that_keeps_saying_it_moved_is_asked_again_then_its_answer_stands(sandbox):
    leader = _keyed(sandbox)
    sandbox.fail(leader, "DeleteRecords", "NOT_LEADER_OR_FOLLOWER")
    p = bounded("--bootstrap-server", sandbox.bootstrap, "--debug", "--command",
                "delete-records --topic keyed --partition 0 --before-offset 1 --yes")
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip().endswith('keyed-0: The broker is not the leader of "keyed" any more: retry the command.')
    assert p.stderr.count(f"DeleteRecords request to broker {leader}: 1 partition(s)") > 1   # asked again


def test_a_slow_coordinator_is_named_and_the_other_groups_answer(sandbox):
    import json

    from tests.test_oneshot import run
    assert run(sandbox, "create-topic --topic t --partitions 3 --replication-factor 3").returncode == 0
    groups = [f"g{i}" for i in range(8)]
    for g in groups:
        assert run(sandbox, f"reset-offsets --group {g} --topic t --to-latest --execute --yes").returncode == 0
    p = run(sandbox, f"describe-group {' '.join(groups)} --state -o jsonl")
    coordinator = {r["group"]: r["coordinator"] for r in map(json.loads, p.stdout.splitlines())}
    slow = coordinator["g0"]
    mine = sorted(g for g in groups if coordinator[g] == slow)
    assert len(mine) < len(groups), "the groups' coordinators are spread over the brokers"
    sandbox.delay(slow, 60_000)
    p = bounded("--bootstrap-server", sandbox.bootstrap, "--command", f"describe-group {' '.join(groups)} --state -o jsonl")
    assert p.returncode == 1, p.stderr
    assert sorted(json.loads(r)["group"] for r in p.stdout.splitlines()) == sorted(set(groups) - set(mine))
    line = p.stderr.strip()
    assert line.startswith(f"The coordinator of group{'s' if len(mine) > 1 else ''} '{mine[0]}'"), line
    assert line.endswith(f"(broker {slow}) did not answer ConsumerGroupDescribe within {TIMEOUT_S} s"), line
