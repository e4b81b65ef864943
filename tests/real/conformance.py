"""The machinery of the conformance suite (tests/real/test_conformance.py holds its tables).

A scenario is a list of steps: shell command lines (each run as a one-shot `kafka-shell
--output json --command LINE`), actions of real clients (confluent-kafka producers and consumers)
and faults (a broker stopped and started). It runs on two `Side`s in the same order, real Apache
Kafka and the sandbox in the same mode, each step giving an outcome (exit code, stdout as JSON,
stderr lines). The outcomes are compared after `normalise` has replaced only what must differ
between two clusters: ids (topic, cluster, member, directory), times, ports, host names, paths.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.clients.streams_app import WordCount, compiled

REPO = Path(__file__).resolve().parent.parent.parent
SHELL = str(REPO / ".venv" / "bin" / "kafka-shell")
SHELL_TIMEOUT_S = 10      # the shell's --timeout for every command line
WAIT_S = 60.0             # how long a Wait step waits for a cluster to settle
PROCESS_TIMEOUT_S = 600   # a guard against a hung shell only (analyze runs Spark, beyond --timeout)


# -- steps -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class As:
    """A shell line run as `profile` (a user and listener of the secured node, see Side.profiles)."""
    profile: str
    line: str


@dataclass(frozen=True)
class Stdin:
    """A shell line with standard input (produce reads values from it)."""
    line: str
    stdin: str


@dataclass(frozen=True)
class Where:
    """A shell line whose result is compared only on the rows whose `column` is one of `values`
    (in every table that has that column): the scenario's choice of what to compare, for
    results that also hold rows the scenario is not about (a broker's static configs)."""
    line: str
    column: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Produce:
    """Records sent by a real producer (acks=all, one flush): values "v0".., keys "k0".. when
    `keyed`; the outcome is each record's partition and offset."""
    topic: str
    count: int
    partition: int | None = None
    keyed: bool = False
    profile: str = "admin"


@dataclass(frozen=True)
class Commit:
    """A group's committed offsets, by a real consumer that commits and leaves (the group is then
    Empty): `offsets` partition -> offset."""
    group: str
    topic: str
    offsets: dict[int, int]


@dataclass(frozen=True)
class Join:
    """A real consumer that joins `group` subscribed to `topic` and stays until the scenario ends
    (or `Leave`); the step ends once it has its assignment."""
    group: str
    topic: str


@dataclass(frozen=True)
class ShareConsume:
    """Kafka's console share consumer (from the Kafka 4.4 jars) in share group `group` until it
    has printed `count` records (each delivery once; `flags` such as --release or --reject); the
    outcome is the values delivered, sorted."""
    group: str
    topic: str
    count: int
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class OldClient:
    """kafka-python speaking as a client of Kafka `api_version` (Produce v0-v2 with message
    formats v0/v1, Fetch v0-v3): `count` records produced to partition 0 of `topic`, then read
    back from its start; the outcome is each record's offset, key, value and whether it has a
    timestamp (format 1)."""
    topic: str
    api_version: tuple[int, ...]
    count: int


@dataclass(frozen=True)
class Leave:
    group: str


@dataclass(frozen=True)
class Streams:
    """A Kafka Streams application (tests/clients/WordCount.java, `group.protocol=streams`) with
    application id `group`, counting the words of `topic` into `sink`; it runs until the scenario
    ends (or `StopStreams`); the step ends once it is RUNNING."""
    group: str
    topic: str
    sink: str


@dataclass(frozen=True)
class StopStreams:
    """The application of `group` closed (it leaves the group)."""
    group: str


@dataclass(frozen=True)
class StopBroker:
    """A broker shut down (a controlled shutdown on Kafka); the step ends once Metadata no longer
    lists it. Every stopped broker is started again when the scenario ends."""
    broker: int


@dataclass(frozen=True)
class StartBroker:
    """A broker started again; the step ends once it is registered and its replicas of `topic`
    are back in the ISR."""
    broker: int
    topic: str | None = None


@dataclass(frozen=True)
class WaitFor:
    """Runs `line` until `done(outcome)` (not compared): for states Kafka reaches a moment after the
    command that caused them (a reassignment completing, an ISR growing)."""
    line: str
    done: Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class ReadFile:
    """The content of a file a command wrote into the side's work dir (JSON when it parses)."""
    name: str


@dataclass(frozen=True)
class ReadSnapshot:
    """The tables (Parquet, read with pyarrow) and the manifest of the one snapshot that
    `snapshot --output-dir {dir}/NAME` wrote."""
    name: str


Step = (str | As | Stdin | Where | ReadSnapshot | Produce | Commit | Join | Leave | ShareConsume | Streams | StopStreams
        | StopBroker | StartBroker | WaitFor | ReadFile | OldClient)


@dataclass(frozen=True)
class Scenario:
    """`name` (also the prefix of its topics and groups: `{t}`, `{t2}`, `{g}` in its lines),
    the steps, and `files` (name -> text, `{t}` etc. filled in) written into the side's work dir
    (`{dir}` in lines) before the first step. `together`, when given, runs once after both
    sides' steps with both runs and gives one more outcome per side (for work done once over
    both sides' results, such as one analysis of both clusters' snapshots)."""
    name: str
    steps: tuple[Step, ...]
    files: tuple[tuple[str, str], ...] = ()
    together: Callable[[tuple[Run, Run]], tuple[dict[str, Any], dict[str, Any]]] | None = None


def scenario(name: str, *steps: Step, files: dict[str, str] | None = None,
             together: Callable[[tuple[Run, Run]], tuple[dict[str, Any], dict[str, Any]]] | None = None) -> Scenario:
    return Scenario(name, tuple(steps), tuple((files or {}).items()), together)


# -- sides -------------------------------------------------------------------------------------

@dataclass
class Side:
    """One cluster the scenarios run on: how to reach it and how to break it."""
    name: str                                  # "kafka" or "sandbox"
    bootstrap: str
    cluster_id: str
    workdir: Path
    node_ports: dict[int, list[int]]           # node id -> its ports (every listener)
    stop_broker: Callable[[int], None]
    start_broker: Callable[[int], None]
    bootstrap_controllers: str | None = None
    listeners: dict[str, str] = field(default_factory=dict)         # listener -> bootstrap
    profiles: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # name -> (listener, client props)
    replacements: dict[str, str] = field(default_factory=dict)      # text -> what it stands for

    def client_config(self, profile: str = "admin") -> dict[str, str]:
        listener, props = self.profiles.get(profile, (None, {}))
        bootstrap = self.listeners[listener] if listener else self.bootstrap
        return {"bootstrap.servers": bootstrap, **props}

    def shell_args(self, profile: str = "admin") -> list[str]:
        if profile not in self.profiles:
            if profile != "admin":
                raise KeyError(f"no profile {profile!r} on {self.name}")
            return ["--bootstrap-server", self.bootstrap]
        listener, props = self.profiles[profile]
        config = self.workdir / f"{profile}.properties"
        if not config.exists():
            config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            config.chmod(0o600)
        return ["--bootstrap-server", self.listeners[listener], "--command-config", str(config)]


@dataclass
class Outcome:
    step: str
    result: dict[str, Any]


class Run:
    """One scenario on one side: the names it fills in, the clients it keeps, the brokers it stopped."""

    def __init__(self, side: Side, sc: Scenario):
        self.side, self.sc = side, sc
        self.dir = side.workdir / sc.name
        self.dir.mkdir(parents=True, exist_ok=True)
        slug = sc.name.replace(".", "-")
        self.names = {"t": slug, "t2": f"{slug}-2", "g": f"{slug}-g", "g2": f"{slug}-g2",
                      "dir": str(self.dir), "ctl": side.bootstrap_controllers or ""}
        self.members: dict[str, Consumer] = {}
        self.apps: dict[str, WordCount] = {}
        self.stopped: set[int] = set()

    def fill(self, text: str) -> str:
        return text.format_map(self.names)

    def run(self) -> list[Outcome]:
        for name, text in self.sc.files:
            (self.dir / name).write_text(self.fill(text))
        outcomes = []
        try:
            for step in self.sc.steps:
                result = self.step(step)
                if result is not None:
                    outcomes.append(Outcome(describe_step(step), result))
        finally:
            for consumer in self.members.values():
                consumer.close()
            for app in self.apps.values():
                app.stop()
            for broker in sorted(self.stopped):
                self.side.start_broker(broker)
        return outcomes

    def step(self, step: Step) -> dict[str, Any] | None:
        if isinstance(step, str):
            return self.shell(step)
        if isinstance(step, As):
            return self.shell(step.line, step.profile)
        if isinstance(step, Stdin):
            return self.shell(step.line, stdin=step.stdin)
        if isinstance(step, Where):
            result = self.shell(step.line)
            if isinstance(result["out"], dict):
                result["out"] = {name: [r for r in rows if not isinstance(r, dict) or step.column not in r
                                        or str(r[step.column]) in step.values]
                                 for name, rows in result["out"].items()}
            return result
        if isinstance(step, Produce):
            return produce(self.side.client_config(step.profile), self.fill(step.topic), step.count,
                           step.partition, step.keyed)
        if isinstance(step, OldClient):
            return old_client(self.side.bootstrap, self.fill(step.topic), step.api_version, step.count)
        if isinstance(step, Commit):
            return commit(self.side.client_config(), self.fill(step.group), self.fill(step.topic), step.offsets)
        if isinstance(step, Join):
            group = self.fill(step.group)
            self.members[group] = join(self.side.client_config(), group, self.fill(step.topic))
            return None
        if isinstance(step, Leave):
            self.members.pop(self.fill(step.group)).close()
            return None
        if isinstance(step, ShareConsume):
            return share_consume(self.side.bootstrap, self.fill(step.group), self.fill(step.topic), step.count,
                                 step.flags)
        if isinstance(step, Streams):
            group = self.fill(step.group)
            app = self.apps[group] = WordCount(compiled(self.side.workdir / "streams-classes"), self.side.bootstrap,
                                               group, self.fill(step.topic), self.fill(step.sink),
                                               self.dir / f"{group}-state")
            app.wait_state("RUNNING")
            return None
        if isinstance(step, StopStreams):
            self.apps.pop(self.fill(step.group)).stop()
            return None
        if isinstance(step, StopBroker):
            self.stopped.add(step.broker)
            self.side.stop_broker(step.broker)
            return None
        if isinstance(step, StartBroker):
            self.stopped.discard(step.broker)
            self.side.start_broker(step.broker)
            if step.topic:
                wait_in_sync(self.side.client_config(), self.fill(step.topic))
            return None
        if isinstance(step, WaitFor):
            deadline = time.monotonic() + WAIT_S
            while not step.done(self.shell(step.line)):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{self.side.name}: {self.fill(step.line)!r} did not reach its state in {WAIT_S:.0f} s")
                time.sleep(0.3)
            return None
        if isinstance(step, ReadSnapshot):
            return read_snapshot(self.dir / self.fill(step.name))
        if isinstance(step, ReadFile):
            path = self.dir / self.fill(step.name)
            text = path.read_text() if path.exists() else None
            try:
                return {"file": json.loads(text) if text is not None else None}
            except ValueError:
                return {"file": text}
        raise TypeError(f"unknown step {step!r}")

    def shell(self, line: str, profile: str = "admin", stdin: str | None = None) -> dict[str, Any]:
        args = [SHELL, *self.side.shell_args(profile), "--output", "json", "--timeout", str(SHELL_TIMEOUT_S),
                "--command", self.fill(line)]
        p = subprocess.run(args, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S, cwd=self.dir,
                           env={**os.environ, "COLUMNS": "200"})
        try:
            out: Any = json.loads(p.stdout) if p.stdout.strip() else None
        except ValueError:
            out = p.stdout.splitlines()
        return {"rc": p.returncode, "out": out, "err": p.stderr.strip().splitlines()}


def share_consume(bootstrap: str, group: str, topic: str, count: int, flags: tuple[str, ...]) -> dict[str, Any]:
    from tests.clients import java_client
    done = subprocess.run(java_client.command("consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
                                              "--topic", topic, "--group", group, "--max-messages", str(count),
                                              "--timeout-ms", "60000", *flags),
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S * 3)
    return {"values": sorted(done.stdout.split()),
            "processed": next((line for line in done.stderr.splitlines() if line.startswith("Processed")), None)}


def describe_step(step: Step) -> str:
    if isinstance(step, str):
        return step
    if isinstance(step, As):
        return f"[{step.profile}] {step.line}"
    if isinstance(step, Stdin | Where):
        return step.line
    return repr(step)


def run_both(sides: tuple[Side, Side], sc: Scenario) -> tuple[list[Outcome], list[Outcome]]:
    """The scenario on both sides at once (each side's steps in order), then `together`."""
    runs = (Run(sides[0], sc), Run(sides[1], sc))
    with ThreadPoolExecutor(2) as pool:
        a, b = (pool.submit(run.run) for run in runs)
        outcomes = a.result(), b.result()
    if sc.together is not None:
        for out, result in zip(outcomes, sc.together(runs)):
            out.append(Outcome("(together)", result))
    return outcomes


def read_snapshot(root: Path) -> dict[str, Any]:
    """Every table of the one snapshot under `root` (root/<cluster id>/<time>/), as rows."""
    import pyarrow.parquet as pq

    [where] = [d for cluster in root.iterdir() for d in cluster.iterdir()]
    tables: dict[str, Any] = {path.stem: [{k: str(v) if hasattr(v, "isoformat") else v for k, v in row.items()}
                                         for row in pq.read_table(path).to_pylist()]
                              for path in sorted(where.glob("*.parquet"))}
    tables["manifest"] = json.loads((where / "manifest.json").read_text())
    return {"snapshot": tables}


def analyze_together(snapshots: str, tables: tuple[str, ...]) -> Callable[[tuple[Run, Run]], tuple[dict[str, Any], dict[str, Any]]]:
    """One `kafka-shell analyze` (one Spark run) over both sides' snapshots in `{dir}/snapshots`;
    each side's outcome is the exit code and its own cluster's rows of the analysis `tables`."""
    def together(runs: tuple[Run, Run]) -> tuple[dict[str, Any], dict[str, Any]]:
        merged = runs[0].side.workdir.parent / f"{runs[0].sc.name}-together"
        (merged / "snapshots").mkdir(parents=True, exist_ok=True)
        for run in runs:
            for cluster in (run.dir / snapshots).iterdir():
                (merged / "snapshots" / cluster.name).symlink_to(cluster)
        p = subprocess.run([SHELL, "analyze", "--snapshots", str(merged / "snapshots"), "--out", str(merged / "out")],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=PROCESS_TIMEOUT_S)
        assert p.returncode == 0, p.stderr[-3000:]
        results = []
        for run in runs:
            result: dict[str, Any] = {"rc": p.returncode}
            for name in tables:
                rows = json.loads((merged / "out" / "tables" / f"{name}.json").read_text())
                result[name] = [row for row in rows if row.get("cluster_id") == run.side.cluster_id]
            results.append(result)
        return results[0], results[1]
    return together


# -- real clients ------------------------------------------------------------------------------

QUIET = {"log_level": 0}


def produce(config: dict[str, str], topic: str, count: int, partition: int | None, keyed: bool) -> dict[str, Any]:
    producer = Producer({**config, **QUIET, "acks": "all", "linger.ms": 50})
    delivered: list[tuple[int, int, str | None]] = []

    def report(err, msg) -> None:
        delivered.append((msg.partition(), msg.offset(), err.name() if err else None))

    for i in range(count):
        kwargs: dict[str, Any] = {"value": f"v{i}".encode(), "on_delivery": report}
        if keyed:
            kwargs["key"] = f"k{i}".encode()
        if partition is not None:
            kwargs["partition"] = partition
        producer.produce(topic, **kwargs)
    left = producer.flush(30)
    return {"produced": sorted(delivered), "undelivered": left}


def old_client(bootstrap: str, topic: str, api_version: tuple[int, ...], count: int) -> dict[str, Any]:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as Partition
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=api_version)
    try:
        sent = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0) for i in range(count)]
        offsets = [future.get(30).offset for future in sent]
    finally:
        producer.close(10)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=api_version, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    try:
        consumer.assign([Partition(topic, 0)])
        read = [[m.offset, m.key.decode(), m.value.decode(), m.timestamp is not None] for m in consumer]
    finally:
        consumer.close()
    return {"produced": offsets, "read": read}


def commit(config: dict[str, str], group: str, topic: str, offsets: dict[int, int]) -> dict[str, Any]:
    consumer = Consumer({**config, **QUIET, "group.id": group, "enable.auto.commit": False})
    try:
        done = consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in sorted(offsets.items())],
                               asynchronous=False)
        return {"committed": sorted((tp.partition, tp.offset, tp.error.name() if tp.error else None) for tp in done or [])}
    finally:
        consumer.close()


def join(config: dict[str, str], group: str, topic: str) -> Consumer:
    consumer = Consumer({**config, **QUIET, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "client.id": "conformance"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + WAIT_S
    while not consumer.assignment():
        consumer.poll(0.2)
        if time.monotonic() > deadline:
            consumer.close()
            raise AssertionError(f"group {group} gave no assignment within {WAIT_S:.0f} s")
    return consumer


def wait_in_sync(config: dict[str, str], topic: str) -> None:
    """Until every partition of `topic` has its whole replica set in the ISR."""
    admin = AdminClient({**config, **QUIET})
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            meta = admin.list_topics(topic, timeout=5).topics[topic]
            if meta.error is None and all(sorted(p.isrs) == sorted(p.replicas) and p.leader >= 0
                                          for p in meta.partitions.values()):
                return
        except Exception:  # noqa: BLE001 - the cluster is settling: ask again
            pass
        time.sleep(0.2)
    raise AssertionError(f"{topic} did not get back in sync within {WAIT_S:.0f} s")


def wait_brokers(config: dict[str, str], want: set[int]) -> None:
    """Until Metadata lists exactly the brokers `want`."""
    admin = AdminClient({**config, **QUIET})
    deadline = time.monotonic() + WAIT_S
    seen: set[int] = set()
    while time.monotonic() < deadline:
        try:
            seen = set(admin.list_topics(timeout=5).brokers)
        except Exception:  # noqa: BLE001 - the cluster is settling: ask again
            seen = set()
        if seen == want:
            return
        time.sleep(0.2)
    raise AssertionError(f"Metadata lists brokers {sorted(seen)}, not {sorted(want)}, after {WAIT_S:.0f} s")


# -- normalising -------------------------------------------------------------------------------

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
ISO_TIME = re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"
                      r"|\b\d{8}T\d{6}(?:\.\d+)?Z")   # and a snapshot directory's UTC time
# JSON keys whose values are ids each cluster makes (Kafka prints them in base64).
ID_KEYS = {"topic_id", "directory_id", "member"}
# JSON keys whose values are facts of the machine (its disk), not of the cluster.
MACHINE_KEYS = {"total_bytes", "usable_bytes"}
# Lists whose order is the order things happened to arrive (timing), not a choice: broker ids
# in the order replicas joined an ISR, records consumed from several partitions.
JOIN_ORDER_KEYS = {"isr", "elr", "last_known_elr", "records"}
# JSON keys whose values are moments or durations of the run, not of the cluster's state.
TIME_KEYS = {"timestamp", "held_since", "seen_since", "time", "last_fetch_timestamp", "last_caught_up_timestamp",
             "max_follower_lag_time_ms", "since", "at", "seconds", "taken_at", "taken_at_ms"}


def normalise(value: Any, side: Side) -> Any:
    """`value` with what must differ between two clusters replaced by names: ports by the node
    they belong to (`<port:1>`), the cluster id, uuids, times, the work dir, and `side.replacements`."""
    ports = {port: f"<port:{node}>" for node, node_ports in side.node_ports.items() for port in node_ports}
    texts = {str(side.workdir): "<dir>", side.cluster_id: "<cluster-id>", **side.replacements}

    def text(s: str) -> str:
        for old, new in texts.items():
            s = s.replace(old, new)
        s = re.sub(r"(?<=:)(\d{2,5})\b", lambda m: ports.get(int(m.group(1)), m.group(1)), s)
        s = UUID.sub("<uuid>", s)
        return ISO_TIME.sub("<time>", s)

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            return {k: walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            items = [walk(x, key) for x in v]
            return sorted(items, key=json.dumps) if key in JOIN_ORDER_KEYS else items
        if key in TIME_KEYS and v not in (None, -1, "", "-"):
            return "<time>"
        if key in MACHINE_KEYS and isinstance(v, int):
            return "<bytes>"
        if key in ID_KEYS and isinstance(v, str):
            return "<uuid>"
        if key == "port" and isinstance(v, int):
            return ports.get(v, v)
        if isinstance(v, str):
            return text(v)
        return v

    return walk(value)


# -- comparing ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class KnownDifference:
    """Where the sandbox is known to answer otherwise than Kafka: on `cluster` (kraft4, zk39,
    secured), in `scenario`, at `steps` (indexes among its compared steps; None: every one), the
    part `part` of the outcome, for `reason`. `part` is "rc", "out" or "err"; a JSON key (its
    value wherever it occurs); or "Column=value" (the rows whose Column is value). The
    comparison masks that part on both sides, and fails if the two sides no longer differ there
    (at any of `steps`): then the entry must go, from docs/sandbox.md too."""
    cluster: str
    scenario: str
    part: str
    reason: str
    steps: tuple[int, ...] | None = None


MASK = "<known difference>"


def mask(result: dict[str, Any], part: str) -> tuple[dict[str, Any], list[Any]]:
    """`result` with `part` masked, and the values masked (see KnownDifference.part)."""
    if part in result:
        return {**result, part: MASK}, [result[part]]
    column, is_row, value = part.partition("=")
    taken: list[Any] = []

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k == part:
                    taken.append(x)
                    out[k] = MASK
                else:
                    out[k] = walk(x)
            return out
        if isinstance(v, list):
            if is_row:
                rows = [x for x in v if isinstance(x, dict) and str(x.get(column)) == value]
                taken.extend(rows)
                v = [x for x in v if not any(x is r for r in rows)]
            return [walk(x) for x in v]
        return v

    return walk(result), taken


def compare(sc: Scenario, kafka: tuple[Side, list[Outcome]], sandbox: tuple[Side, list[Outcome]],
            known: list[KnownDifference]) -> None:
    """Asserts the two runs equal once normalised, known differences masked (and still there)."""
    (kside, kout), (sside, sout) = kafka, sandbox
    assert [o.step for o in kout] == [o.step for o in sout]
    problems = []
    seen = {d: False for d in known}
    for i, (k, s) in enumerate(zip(kout, sout)):
        if any("connection refused" in line for line in k.result.get("err", [])):
            problems.append(f"step {i} `{k.step}`: Kafka refused the connection (a node down?): nothing was compared")
        kres, sres = normalise(k.result, kside), normalise(s.result, sside)
        for diff in (d for d in known if d.steps is None or i in d.steps):
            for part in diff.part.split("|"):
                kres, ktaken = mask(kres, part)
                sres, staken = mask(sres, part)
                seen[diff] |= ktaken != staken
        if kres != sres:
            problems.append(f"step {i} `{k.step}` differs:\n  kafka:   {json.dumps(kres, sort_keys=True)}\n"
                            f"  sandbox: {json.dumps(sres, sort_keys=True)}")
    for diff, differed in seen.items():
        if not differed:
            problems.append(f"the known difference in {diff.part!r} (steps {diff.steps or 'all'}) is gone: "
                            "remove it from KNOWN_DIFFERENCES and docs/sandbox.md")
    assert not problems, f"scenario {sc.name}:\n" + "\n".join(problems)
