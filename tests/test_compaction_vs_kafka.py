"""Log compaction and retention compared with real Apache Kafka 4.x: the same writes on both
(tests/compaction_scenarios.py), then the same log read back once the cleaners have run
(batches, records, delete horizons set, the log start offset, aborted transactions); and the
same answer to records without a key on a compacted topic."""

from __future__ import annotations

import time

import pytest

from kafka_shell.connection.channel import Channel
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox import cleaner
from kafka_shell.sandbox.model import now_ms
from kafka_shell.sandbox.server import Sandbox
from tests import compaction_scenarios as scenarios

BACKOFF_MS = "200"   # the cleaners wake every 200 ms instead of 15 s
# Kafka's cleaner also allocates its key map (128 MiB) at every restart a config change makes:
# a small one keeps that cheap on a busy machine (these logs hold a few dozen keys).
KAFKA_CLEANER = {"log.cleaner.backoff.ms": BACKOFF_MS, "log.cleaner.dedupe.buffer.size": str(4 << 20)}
KAFKA_CLEANS_WITHIN_S = 240   # a busy machine slows Kafka's cleaner thread a lot; the sandbox's is drained
BROKER_RESOURCE = 4
SET, DELETE = 0, 1


def _cluster_config(bootstrap: str, key: str, value: str | None) -> None:
    """Set (or, with None, remove) a cluster-wide dynamic broker config."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    channel = Channel(host, int(port))
    try:
        answer = channel.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {"validate_only": False, "resources": [
            {"resource_type": BROKER_RESOURCE, "resource_name": "", "configs": [
                {"name": key, "config_operation": SET if value is not None else DELETE, "value": value}]}]})
        assert answer["responses"][0]["error_code"] == 0, answer
    finally:
        channel.close()


@pytest.fixture(scope="module")
def kafka(kafka4):
    for key, value in KAFKA_CLEANER.items():
        _cluster_config(kafka4.bootstrap, key, value)
    yield kafka4
    for key in KAFKA_CLEANER:
        _cluster_config(kafka4.bootstrap, key, None)


@pytest.fixture(scope="module")
def sandbox3():
    with Sandbox(brokers=3) as s:
        _cluster_config(s.bootstrap, "log.cleaner.backoff.ms", BACKOFF_MS)
        yield s


def _drain(s: Sandbox) -> None:
    """Run the sandbox's cleaner until no log is left to clean (its ticker would, within 200 ms)."""
    def go() -> None:
        while cleaner.clean_filthiest(s.cluster, now_ms()):
            pass
    s.call(go)


@pytest.mark.parametrize("name", list(scenarios.SCENARIOS))
def test_cleaned_log_as_kafkas(kafka, sandbox3, name):
    scenario = scenarios.SCENARIOS[name]()
    real, ours = (scenarios.Topic(c.bootstrap, **scenario.configs) for c in (kafka, sandbox3))
    try:
        for i, step in enumerate(scenario.steps):
            answers = [step.act(real), step.act(ours)]
            assert answers[0] == answers[1], f"step {i}: Kafka answered {answers[0]}, the sandbox {answers[1]}"
            _drain(sandbox3)
            expected = ours.probe()
            assert step.done(expected), f"step {i}: the sandbox did not clean as the scenario says: {expected}"
            # Kafka's cleaner runs in its own time: wait until its log reads the same (or show both).
            deadline = time.monotonic() + KAFKA_CLEANS_WITHIN_S
            while (got := real.probe()) != expected and time.monotonic() < deadline:
                time.sleep(0.2)
            assert got == expected, f"step {i}:\nKafka   {got}\nsandbox {expected}"
    finally:
        real.close()
        ours.close()


def test_keyless_records_refused_as_kafka_does(kafka, sandbox3):
    """INVALID_RECORD with one record error per keyless record, Kafka's messages, the log start
    offset; no record errors before Produce v8; a keyed batch is taken."""
    real, ours = scenarios.keyless(kafka.bootstrap), scenarios.keyless(sandbox3.bootstrap)
    assert ours["v11"]["error_code"] == 87 and [e["batch_index"] for e in ours["v11"]["record_errors"]] == [1, 2]
    assert ours == real
