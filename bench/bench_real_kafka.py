"""The shell against real Apache Kafka 4.x, side by side in one run; prints figures and ratios.

    .venv/bin/python bench/bench_real_kafka.py [--runs 15]

Starts a KRaft cluster (controller 100, brokers 1-3) from the jars `.ci/kafka-dist` caches
(tests/real_kafka.py), then, interleaving the tools so they see the same machine load:

1. one-shot `list-topics` (20 topics) against a bare confluent-kafka script and against Kafka's
   own kafka-topics (`java -cp 'libs/*' org.apache.kafka.tools.TopicCommand --list`);
2. one-shot `describe-topic --topic t` (6 partitions, RF 3) against the same two (`--describe`);
3. describe of a 10,000-partition topic (RF 1): one-shot, in a REPL session (the command alone),
   and against the same two;
4. replay of 1,000 create-topic lines against one bare confluent-kafka `create_topics` call of
   1,000 topics, and against 1,000 kafka-topics `--create` runs (extrapolated from a few).
Each figure is the median of `--runs` runs (fewer for the 10,000-partition topic and the JVM
creates); whole processes are timed, Python and JVM start-up included.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.real_kafka import KAFKA_4, RealKafka  # noqa: E402

SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")

BARE_LIST = """
from confluent_kafka.admin import AdminClient
md = AdminClient({"bootstrap.servers": %r}).list_topics(timeout=10)
for name in sorted(md.topics):
    t = md.topics[name]
    print(name, len(t.partitions), len(next(iter(t.partitions.values())).replicas) if t.partitions else 0)
"""

# What describe-topic shows: the partitions (leader, replicas, ISR) and the topic's overrides.
BARE_DESCRIBE = """
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
admin = AdminClient({"bootstrap.servers": %r})
t = admin.list_topics(%r, timeout=10).topics[%r]
configs = next(iter(admin.describe_configs([ConfigResource(ResourceType.TOPIC, %r)]).values())).result()
print(%r, len(t.partitions), ",".join(f"{k}={v.value}" for k, v in configs.items() if not v.is_default))
for p in sorted(t.partitions.values(), key=lambda p: p.id):
    print(p.id, p.leader, p.replicas, p.isrs)
"""

BARE_CREATE = """
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({"bootstrap.servers": %r})
for f in admin.create_topics([NewTopic(f"bare-{i}", 1, 1) for i in range(1000)], request_timeout=120).values():
    f.result()
"""


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd[:6])}... failed ({p.returncode}): {p.stderr[-2000:]}")
    return elapsed


def medians(runs: int, **tools: Callable[[], float]) -> dict[str, float]:
    """Each tool `runs` times, interleaved; name -> median seconds."""
    times: dict[str, list[float]] = {name: [] for name in tools}
    for _ in range(runs):
        for name, tool in tools.items():
            times[name].append(tool())
    return {name: statistics.median(t) for name, t in times.items()}


def report(title: str, figures: dict[str, float], ours: str = "kafka-shell") -> None:
    base = figures[ours]
    parts = [f"{name} {secs * 1000:.0f} ms" + ("" if name == ours else f" (kafka-shell is {base / secs:.2f}x)")
             for name, secs in figures.items()]
    print(f"{title}: " + "; ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="bench-real-kafka-") as root, \
            RealKafka(KAFKA_4, controllers=1, brokers=3, heap="512m", root=Path(root),
                      broker_configs={"default.replication.factor": "1"}) as cluster:
        boot = cluster.bootstrap
        java = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{cluster.libs}/*",
                "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", boot]
        shell = [SHELL, "--bootstrap-server", boot]
        print(f"Apache Kafka {cluster.version} (KRaft: controller 100, brokers 1-3) on 127.0.0.1; "
              f"median of {runs} runs each, interleaved")

        script = "".join(f"create-topic --topic t{i} --partitions 3 --replication-factor 2\n" for i in range(19))
        script += "create-topic --topic t --partitions 6 --replication-factor 3 --config retention.ms=86400000\n"
        with tempfile.NamedTemporaryFile("w", suffix=".ksh") as f:
            f.write(script)
            f.flush()
            timed([*shell, "--file", f.name, "--quiet"])

        report("one-shot list-topics (20 topics)", medians(
            runs,
            **{"kafka-shell": lambda: timed([*shell, "--command", "list-topics"]),
               "bare confluent-kafka": lambda: timed([sys.executable, "-c", BARE_LIST % boot]),
               "kafka-topics --list": lambda: timed([*java, "--list"])}))
        report("one-shot describe-topic (6 partitions, RF 3)", medians(
            runs,
            **{"kafka-shell": lambda: timed([*shell, "--command", "describe-topic --topic t"]),
               "bare confluent-kafka": lambda: timed([sys.executable, "-c", BARE_DESCRIBE % (boot, "t", "t", "t", "t")]),
               "kafka-topics --describe": lambda: timed([*java, "--describe", "--topic", "t"])}))

        # Kafka takes at most 10,000 metadata records per request (the topic's own included).
        timed([*shell, "--timeout", "120", "--command", "create-topic --topic big --partitions 5000 --replication-factor 1"])
        timed([*shell, "--timeout", "120", "--command", "alter-topic --topic big --partitions 10000"])
        big_runs = max(3, runs // 3)
        figures = medians(
            big_runs,
            **{"kafka-shell": lambda: timed([*shell, "--timeout", "60", "--command", "describe-topic --topic big"]),
               "bare confluent-kafka": lambda: timed([sys.executable, "-c", BARE_DESCRIBE % (boot, "big", "big", "big", "big")]),
               "kafka-topics --describe": lambda: timed([*java, "--describe", "--topic", "big"])})
        report(f"one-shot describe of a 10,000-partition topic (median of {big_runs})", figures)
        print(f"  in a REPL session (the command alone, its fresh read and table included): "
              f"median {repl_describe(boot, 'big', big_runs) * 1000:.0f} ms")

        with tempfile.TemporaryDirectory() as tmp:
            creates = Path(tmp) / "create.ksh"
            creates.write_text("".join(f"create-topic --topic replay-{i} --partitions 1 --replication-factor 1\n"
                                       for i in range(1000)))
            replay = timed([*shell, "--timeout", "120", "--file", str(creates), "--quiet"])
        bare = timed([sys.executable, "-c", BARE_CREATE % boot])
        samples = 5
        java_create = statistics.median(timed([*java, "--create", "--topic", f"java-{i}", "--partitions", "1",
                                               "--replication-factor", "1"]) for i in range(samples))
        print(f"1,000 creates: kafka-shell replay {replay:.2f} s; bare confluent-kafka create_topics of 1,000 "
              f"{bare:.2f} s (kafka-shell is {replay / bare:.2f}x); 1,000 kafka-topics --create runs "
              f"{java_create * 1000:.0f} s (extrapolated from the median of {samples}: "
              f"{java_create * 1000:.0f} ms each; kafka-shell is {replay / (java_create * 1000):.3f}x)")


def repl_describe(bootstrap: str, topic: str, runs: int) -> float:
    from kafka_shell.declarations.registry import load_commands
    from kafka_shell.face.runner import run_line
    from kafka_shell.connection.session import Session, Target
    load_commands()
    session = Session(target=Target(bootstrap), stdout=io.StringIO(), stderr=io.StringIO())
    session.conn.connect()   # a REPL fills its cache at start
    times = []
    for _ in range(runs):
        session.stdout = io.StringIO()
        start = time.perf_counter()
        assert run_line(session, f"describe-topic --topic {topic}") == 0
        times.append(time.perf_counter() - start)
    session.close()
    return statistics.median(times)


if __name__ == "__main__":
    main()
