"""Idempotent producers and transactions: the same raw requests on real Apache Kafka 4.x and on the
sandbox give the same answers (tests/txn_scenarios.py: duplicates, sequence gaps, fenced epochs,
transactional batches without a transactional id or outside a transaction, client-written control
batches, read_committed fetches and the last stable offset with open and aborted transactions,
transactions v1 and v2, fencing)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_shell.sandbox import transactions
from kafka_shell.sandbox.server import Sandbox
from tests import txn_scenarios


@pytest.fixture(scope="module")
def sandbox3():
    with Sandbox(brokers=3) as s:
        yield s


@pytest.mark.parametrize("scenario", ["idempotence", "transactions_v1", "transactions_v2", "offsets_in_transactions"])
def test_sandbox_answers_as_kafka_does(kafka4, sandbox3, scenario):
    answers = []
    for bootstrap in (kafka4.bootstrap, sandbox3.bootstrap):
        cluster = txn_scenarios.Cluster(bootstrap)
        try:
            answers.append(getattr(txn_scenarios, scenario)(cluster))
        finally:
            cluster.close()
    kafka, sandbox = answers
    if scenario == "idempotence":   # what the comparison rests on, spelled out
        assert sandbox["duplicate"] == sandbox["first"] == (0, 0)
        assert [sandbox[k][0] for k in ("gap", "fenced epoch", "transactional without id", "client control batch",
                                        "two batches", "zstd before v7")] == [45, 47, 53, 87, 87, 76]
    if scenario == "transactions_v1":
        assert sandbox["open: offsets"] == (0, 5) and sandbox["aborted: read_committed"]["aborted"] == [0]
    assert kafka.keys() == sandbox.keys()
    assert {k: v for k, v in sandbox.items() if v != kafka[k]} == {}, {k: kafka[k] for k in kafka if sandbox[k] != kafka[k]}


def transaction_log(bootstrap: str, prefix: str) -> dict[str, list[tuple[bytes, object]]]:
    """The __transaction_state records of the transactional ids starting with `prefix`, by id, in
    order: (raw value, parsed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "log-reader", "enable.auto.commit": False,
                         "log_level": 0})
    try:
        partitions = consumer.list_topics(transactions.TXN_TOPIC, timeout=10).topics[transactions.TXN_TOPIC].partitions
        assigned = [TopicPartition(transactions.TXN_TOPIC, p, 0) for p in partitions]
        consumer.assign(assigned)
        ends = {p.partition: consumer.get_watermark_offsets(p, timeout=10)[1] for p in assigned}
        records: dict[str, list[tuple[bytes, object]]] = {}
        deadline = time.monotonic() + 30
        while any(consumer.position([TopicPartition(transactions.TXN_TOPIC, p)])[0].offset < end
                  for p, end in ends.items() if end > 0):
            assert time.monotonic() < deadline, "__transaction_state not read to its end"
            m = consumer.poll(0.2)
            if m is None or m.error() or m.value() is None:
                continue
            transactional_id = m.key()[4:].decode()
            if transactional_id.startswith(prefix):
                records.setdefault(transactional_id, []).append(
                    (m.value(), transactions._parse_value(transactional_id, m.value())))
        return records
    finally:
        consumer.close()


def test_transaction_log_records_as_kafka_writes_them(kafka4, sandbox3):
    """The coordinators' records of one transaction's life (InitProducerId, a produce that adds a
    partition, commit, abort, a fencing InitProducerId) in Kafka's format, alike on both."""
    lives = []
    for bootstrap in (kafka4.bootstrap, sandbox3.bootstrap):
        cluster = txn_scenarios.Cluster(bootstrap)
        try:
            txn_scenarios.transactions_v2(cluster)
            [(tid, records)] = transaction_log(bootstrap, "v2-" + cluster.topic).items()
        finally:
            cluster.close()
        first_epoch = records[0][1].producer_epoch
        lives.append([(raw[:2], t.state_name, t.producer_epoch - first_epoch, len(t.partitions),
                       t.previous_producer_id == t.producer_id, t.timeout_ms, t.client_version)
                      for raw, t in records])
        # Every record reads back and writes again byte for byte (Kafka's TransactionLogValue).
        assert all(transactions.log_value(t, raw[:2] == b"\x00\x01") == raw for raw, t in records)
    kafka, sandbox = lives
    states = [r[1] for r in kafka]
    assert states[:4] == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"] and "PrepareAbort" in states
    assert sandbox == kafka


def test_compression_type_as_kafka_applies_it(kafka4, sandbox3):
    kafka, sandbox = (txn_scenarios.compression(b) for b in (kafka4.bootstrap, sandbox3.bootstrap))
    assert kafka["producer"][1] == [0, 1, 2, 3, 4] and kafka["zstd"][1] == [4] * 5
    assert sandbox == kafka
