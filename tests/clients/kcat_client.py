"""The client table's scenarios (tests/test_client_table.py) done with kcat (Debian's package, on
its own librdkafka), with its defaults unless the scenario says otherwise. kcat creates no
topics and writes no transactions: its admin scenario is the metadata listing (-L), its errors
the two a producer can meet."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time

# librdkafka's names (rd_kafka_err2str) of the errors the table expects.
ERRORS = {"Broker: Broker failed to validate record": 87, "Broker: Message size too large": 10}


def run(bootstrap: str, *args: str, stdin: str | None = None, timeout_s: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["kcat", "-b", bootstrap, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout_s)


def admin(bootstrap: str, topic: str) -> dict:
    listing = json.loads(run(bootstrap, "-L", "-J", "-t", topic).stdout)
    partitions = next(t["partitions"] for t in listing["topics"] if t["topic"] == topic)
    return {"brokers": len(listing["brokers"]), "partitions": len(partitions),
            "leaders": all(p["leader"] >= 0 for p in partitions)}


def produce(bootstrap: str, topic: str, combos: list) -> dict:
    for codec, acks in combos:
        lines = "".join(f"{codec}-{acks}-{i}:{f'value {i} ' * 20}\n" for i in range(5))
        done = run(bootstrap, "-P", "-t", topic, "-p", "0", "-K:", "-z", codec, "-X", f"acks={acks}", stdin=lines)
        assert done.returncode == 0, done.stderr
    return {}


def idempotent(bootstrap: str, topic: str) -> dict:
    lines = "".join(f"k{i}:v{i}\n" for i in range(10))
    done = run(bootstrap, "-P", "-t", topic, "-p", "0", "-K:", "-X", "enable.idempotence=true", stdin=lines)
    assert done.returncode == 0, done.stderr
    return {}


def read_committed(bootstrap: str, topic: str, count: int) -> dict:
    # librdkafka consumers read committed by default.
    done = run(bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%s\n")
    return {"values": done.stdout.split()[:count]}


class _Member:
    """A `kcat -G` balanced consumer and the assignments it reports."""

    def __init__(self, bootstrap: str, group_id: str, topic: str):
        self.proc = subprocess.Popen(["kcat", "-b", bootstrap, "-G", group_id, topic], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.assigned: list[int] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def update(self) -> None:
        while not self.lines.empty():
            line = self.lines.get()
            if "rebalanced" in line and ": assigned: " in line:
                self.assigned = sorted(int(p.split("[")[1].rstrip("]")) for p in line.split(": assigned: ")[1].strip().split(", "))
            elif "rebalanced" in line and ": revoked: " in line:
                self.assigned = []

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def _wait(members: list[_Member], condition) -> None:
    deadline = time.monotonic() + 60
    while True:
        for m in members:
            m.update()
        if condition():
            return
        assert time.monotonic() < deadline, "no assignment"
        time.sleep(0.05)


def group(bootstrap: str, topic: str, group_id: str) -> dict:
    first = _Member(bootstrap, group_id, topic)
    try:
        _wait([first], lambda: first.assigned == [0, 1, 2, 3])
        out: dict = {"first": first.assigned}
        second = _Member(bootstrap, group_id, topic)
        try:
            _wait([first, second], lambda: bool(first.assigned) and bool(second.assigned)
                  and sorted(first.assigned + second.assigned) == [0, 1, 2, 3])
            out["after"] = sorted([first.assigned, second.assigned])
        finally:
            second.stop()
    finally:
        first.stop()
    return out


def _offset_for(bootstrap: str, topic: str, timestamp: int) -> int:
    done = run(bootstrap, "-Q", "-t", f"{topic}:0:{timestamp}")   # "topic [0] offset N"
    return int(done.stdout.split()[-1])


def seek(bootstrap: str, topic: str, at: int) -> dict:
    first = run(bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", "1", "-f", "%o\n")
    return {"beginning": int(first.stdout.split()[0]), "end": _offset_for(bootstrap, topic, -1),
            "time": _offset_for(bootstrap, topic, at)}


def errors(bootstrap: str, existing: str, compacted: str, small: str) -> dict:
    def code(topic: str, line: str, *key: str) -> int:
        done = run(bootstrap, "-P", "-t", topic, "-p", "0", *key, stdin=line)
        return next((c for text, c in ERRORS.items() if text in done.stderr), 0 if done.returncode == 0 else -1)
    return {"keyless on a compacted topic": code(compacted, "no key here\n"),
            "record too large": code(small, "k:" + "x" * 2000 + "\n", "-K:")}
