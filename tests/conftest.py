"""Shared fixtures: a real sandbox cluster on loopback, and real confluent-kafka clients on it.

`sandbox` runs in KRaft mode (a controller quorum of its own, id 100) unless a module or a
test asks otherwise with a `modes` marker: `pytestmark = BOTH_MODES` runs every test of a
module in KRaft and in ZooKeeper mode (ids "kraft" / "zk"); `@ZK_MODE` (the closest marker
wins) runs a test in zk mode only, for ZooKeeper-era semantics (the controller is a broker,
NOT_CONTROLLER from the others), `@KRAFT_MODE` in KRaft mode only.
"""

from __future__ import annotations

import os

import pytest
from confluent_kafka.admin import AdminClient

from kafka_shell.sandbox.server import Sandbox

BOTH_MODES = pytest.mark.modes("kraft", "zk")
ZK_MODE = pytest.mark.modes("zk")
KRAFT_MODE = pytest.mark.modes("kraft")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "modes(*names): the sandbox modes (kraft, zk) a test runs in")


def pytest_generate_tests(metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("modes")
    if marker is not None and "sandbox_mode" in metafunc.fixturenames:
        metafunc.parametrize("sandbox_mode", marker.args, indirect=True, ids=list(marker.args))


@pytest.fixture(scope="session", autouse=True)
def private_data_dir(tmp_path_factory):
    """Shells the tests start keep their data (controller history, ...) out of the user's."""
    if "KAFKA_SHELL_DATA_DIR" not in os.environ:
        os.environ["KAFKA_SHELL_DATA_DIR"] = str(tmp_path_factory.mktemp("kafka-shell-data"))
        yield
        del os.environ["KAFKA_SHELL_DATA_DIR"]
    else:
        yield


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
