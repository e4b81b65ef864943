"""The client table's scenarios (tests/test_client_table.py) done with Kafka's own Java tools from
the jars .ci/kafka-dist caches (`java -cp 'libs/*' org.apache.kafka.tools...`): TopicCommand,
ConfigCommand, BrokerApiVersionsCommand, the console producer and consumer, the producer perf
test, GetOffsetShell, ConsumerGroupCommand, AclCommand and LeaderElectionCommand, each with its
defaults unless the scenario says otherwise. An error is read from the exception the tool
prints."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.real_kafka import KAFKA_4, kafka_libs

TOOLS = "org.apache.kafka.tools."
# The exceptions Kafka's clients raise for the errors the table expects.
ERRORS = {"TopicExistsException": 36, "InvalidReplicationFactorException": 38, "InvalidConfigurationException": 40,
          "InvalidPartitionsException": 37, "GroupIdNotFoundException": 69, "SecurityDisabledException": 54,
          "InvalidRecordException": 87, "RecordTooLargeException": 10}


def _libs() -> Path:
    return kafka_libs(KAFKA_4)


def command(tool: str, *args: str) -> list[str]:
    return ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{_libs()}/*", TOOLS + tool, *args]


def run(tool: str, *args: str, stdin: str | None = None, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(command(tool, *args), input=stdin, capture_output=True, text=True, timeout=timeout_s)


def _code(done: subprocess.CompletedProcess) -> int:
    """0 for success, the code of the Kafka exception the tool printed, else -1."""
    text = done.stdout + done.stderr
    found = [(text.find(name), code) for name, code in ERRORS.items() if name in text]
    if found:
        return min(found)[1]
    return 0 if done.returncode == 0 else -1


def _config(bootstrap: str, topic: str, key: str) -> str | None:
    out = run("ConfigCommand", "--bootstrap-server", bootstrap, "--entity-type", "topics", "--entity-name", topic,
              "--describe").stdout
    return next((line.split("=", 1)[1].split()[0] for line in out.split() if line.startswith(key + "=")), None)


def admin(bootstrap: str, topic: str) -> dict:
    out: dict = {"created": _code(run("TopicCommand", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                                      "--partitions", "3", "--replication-factor", "2",
                                      "--config", "retention.ms=3600000"))}
    out["listed"] = topic in run("TopicCommand", "--bootstrap-server", bootstrap, "--list").stdout.split()
    out["described"] = _config(bootstrap, topic, "retention.ms")
    out["altered"] = _code(run("ConfigCommand", "--bootstrap-server", bootstrap, "--entity-type", "topics",
                               "--entity-name", topic, "--alter", "--add-config", "retention.ms=7200000"))
    out["described after"] = _config(bootstrap, topic, "retention.ms")
    out["partitions added"] = _code(run("TopicCommand", "--bootstrap-server", bootstrap, "--alter", "--topic", topic,
                                        "--partitions", "4"))
    versions = run("BrokerApiVersionsCommand", "--bootstrap-server", bootstrap).stdout
    out["brokers"] = versions.count("(id: ")
    out["deleted"] = _code(run("TopicCommand", "--bootstrap-server", bootstrap, "--delete", "--topic", topic))
    return out


def _console_produce(bootstrap: str, topic: str, lines: str, *options: str) -> int:
    return _code(run("ConsoleProducer", "--bootstrap-server", bootstrap, "--topic", topic, "--reader-property",
                     "parse.key=true", "--reader-property", "key.separator=:", *options, stdin=lines))


def produce(bootstrap: str, topic: str, combos: list) -> dict:
    for codec, acks in combos:
        lines = "".join(f"{codec}-{acks}-{i}:{f'value {i} ' * 20}\n" for i in range(5))
        assert _console_produce(bootstrap, topic, lines, "--compression-codec", codec, "--request-required-acks",
                                {"all": "-1"}.get(acks, acks)) == 0
    return {}


def idempotent(bootstrap: str, topic: str) -> dict:
    # The Java producer is idempotent by default (acks=all).
    assert _console_produce(bootstrap, topic, "".join(f"k{i}:v{i}\n" for i in range(10))) == 0
    return {}


def transactional(bootstrap: str, topic: str) -> dict:
    """The perf test's transactions (each committed; Kafka's tools cannot abort one)."""
    done = run("ProducerPerformance", "--topic", topic, "--num-records", "5", "--record-size", "10", "--throughput",
               "-1", "--transactional-id", "java-" + topic, "--transaction-duration-ms", "100",
               "--producer-props", f"bootstrap.servers={bootstrap}")
    assert done.returncode == 0, done.stderr
    return {"records": 5}


def read_committed(bootstrap: str, topic: str, count: int) -> dict:
    done = run("consumer.ConsoleConsumer", "--bootstrap-server", bootstrap, "--topic", topic, "--partition", "0",
               "--offset", "earliest", "--isolation-level", "read_committed", "--max-messages", str(count),
               "--timeout-ms", "30000")
    return {"values": done.stdout.split()}


def group(bootstrap: str, topic: str, group_id: str, members) -> dict:
    """Console consumers in a group; `members()` tells the group's assignment as the broker has it."""
    def consumer() -> subprocess.Popen:
        return subprocess.Popen(command("consumer.ConsoleConsumer", "--bootstrap-server", bootstrap, "--topic", topic,
                                        "--group", group_id), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait(condition) -> list:
        deadline = time.monotonic() + 90
        while not condition(assigned := members()):
            assert time.monotonic() < deadline, f"group {group_id}: {assigned}"
            time.sleep(0.2)
        return assigned

    procs = [consumer()]
    try:
        first = wait(lambda a: len(a) == 1 and a[0] == [0, 1, 2, 3])
        procs.append(consumer())
        after = wait(lambda a: len(a) == 2 and all(a) and sorted(p for ps in a for p in ps) == [0, 1, 2, 3])
        described = run("consumer.group.ConsumerGroupCommand", "--bootstrap-server", bootstrap, "--describe",
                        "--group", group_id, "--members").stdout
        rows = [line for line in described.splitlines() if line.startswith(group_id + " ")]
        return {"first": first[0], "after": sorted(after), "members described": len(rows)}
    finally:
        for p in procs:
            p.terminate()
            p.wait(30)


def _offset(bootstrap: str, topic: str, time_spec: str) -> int:
    out = run("GetOffsetShell", "--bootstrap-server", bootstrap, "--topic", topic, "--partitions", "0",
              "--time", time_spec).stdout   # topic:0:offset
    return int(out.split()[0].rsplit(":", 1)[1])


def seek(bootstrap: str, topic: str, at: int) -> dict:
    first = run("consumer.ConsoleConsumer", "--bootstrap-server", bootstrap, "--topic", topic, "--partition", "0",
                "--offset", "earliest", "--max-messages", "1", "--formatter-property", "print.offset=true",
                "--timeout-ms", "30000").stdout   # Offset:0	v0
    return {"beginning": int(first.split("Offset:")[1].split()[0]), "end": _offset(bootstrap, topic, "latest"),
            "time": _offset(bootstrap, topic, str(at))}


def errors(bootstrap: str, existing: str, compacted: str, small: str) -> dict:
    def topics(*args: str) -> int:
        return _code(run("TopicCommand", "--bootstrap-server", bootstrap, *args))
    election = run("LeaderElectionCommand", "--bootstrap-server", bootstrap, "--election-type", "preferred",
                   "--topic", existing, "--partition", "0")
    return {
        "topic exists": topics("--create", "--topic", existing),
        "replication factor": topics("--create", "--topic", existing + "-rf", "--replication-factor", "4"),
        "fewer partitions": topics("--alter", "--topic", existing, "--partitions", "1"),
        "unknown group": _code(run("consumer.group.ConsumerGroupCommand", "--bootstrap-server", bootstrap, "--delete",
                                   "--group", "no-such-group")),
        "acls without an authorizer": _code(run("AclCommand", "--bootstrap-server", bootstrap, "--list")),
        # LeaderElectionCommand reports ELECTION_NOT_NEEDED as a valid replica already elected.
        "preferred leader already": 84 if "Valid replica already elected" in election.stdout else _code(election),
        "keyless on a compacted topic": _code(run("ConsoleProducer", "--bootstrap-server", bootstrap, "--topic",
                                                  compacted, stdin="no key\n")),
        "record too large": _console_produce(bootstrap, small, "k:" + "x" * 2000 + "\n"),
    }


SHARE_PROBE = Path(__file__).parent / "java" / "ShareProbe.java"


def share_probe(bootstrap: str, topic: str, group: str, mode: str, count: int) -> list[str]:
    """Kafka's KafkaShareConsumer in explicit acknowledgement mode (tests/clients/java/ShareProbe.java,
    run as a single source file): `hold` keeps COUNT records unacknowledged, `accept` accepts them."""
    return ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{_libs()}/*",
            str(SHARE_PROBE), bootstrap, topic, group, mode, str(count)]
