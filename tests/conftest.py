"""Shared fixtures: a real sandbox cluster on loopback, and real confluent-kafka clients on it."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient

from kafka_shell.sandbox.server import Sandbox


@pytest.fixture
def sandbox():
    """A fresh 3-broker cluster per test (starting one takes milliseconds)."""
    with Sandbox(brokers=3) as s:
        yield s


@pytest.fixture
def admin(sandbox):
    return AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
