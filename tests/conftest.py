"""Shared fixtures: a real sandbox cluster on loopback, and real confluent-kafka clients on it.

`sandbox` runs in KRaft mode (a controller quorum of its own, id 100) unless a test or a module
asks for the mode with the `sandbox_mode` parameter: `BOTH_MODES` runs it in KRaft and in
ZooKeeper mode (ids "kraft" / "zk"), `ZK_MODE` in zk mode only (tests of ZooKeeper-era
semantics: the controller is a broker, NOT_CONTROLLER from the others).
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient

from kafka_shell.sandbox.server import Sandbox

BOTH_MODES = pytest.mark.parametrize("sandbox_mode", ["kraft", "zk"], indirect=True)
ZK_MODE = pytest.mark.parametrize("sandbox_mode", ["zk"], indirect=True)


@pytest.fixture
def sandbox_mode(request) -> str:
    return getattr(request, "param", "kraft")


@pytest.fixture
def sandbox(sandbox_mode):
    """A fresh 3-broker cluster per test (starting one takes milliseconds)."""
    with Sandbox(brokers=3, mode=sandbox_mode) as s:
        yield s


@pytest.fixture
def admin(sandbox):
    return AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
