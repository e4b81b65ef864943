"""Idempotent producers and transactions: the same raw requests on real Apache Kafka 4.x and on the
sandbox give the same answers (tests/txn_scenarios.py: duplicates, sequence gaps, fenced epochs,
transactional batches without a transactional id or outside a transaction, client-written control
batches, read_committed fetches and the last stable offset with open and aborted transactions,
transactions v1 and v2, fencing)."""

from __future__ import annotations

import pytest

from kafka_shell.sandbox.server import Sandbox
from tests import txn_scenarios


@pytest.fixture(scope="module")
def sandbox3():
    with Sandbox(brokers=3) as s:
        yield s


@pytest.mark.parametrize("scenario", ["idempotence", "transactions_v1", "transactions_v2"])
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
