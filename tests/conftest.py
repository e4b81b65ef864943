"""Shared fixtures: a real sandbox cluster on loopback, and real confluent-kafka clients on it.

`sandbox` runs in KRaft mode (a controller quorum of its own, id 100) unless a module or a
test asks otherwise with a `modes` marker: `pytestmark = BOTH_MODES` runs every test of a
module in KRaft and in ZooKeeper mode (ids "kraft" / "zk"); `@ZK_MODE` (the closest marker
wins) runs a test in zk mode only, for ZooKeeper-era semantics (the controller is a broker,
NOT_CONTROLLER from the others), `@KRAFT_MODE` in KRaft mode only.
"""

from __future__ import annotations

import os

import confluent_kafka
import confluent_kafka.admin
import pytest

from kafka_shell.protocol import codec
from kafka_shell.declarations import registry
from kafka_shell.sandbox.server import Sandbox


def _quiet_conf(conf: object, kwargs: dict) -> object:
    """A client's settings without a logger of their own get log level 0: librdkafka logs
    (connection refused by a broker a test stopped, ...) from its own threads, past pytest's
    capture, into the output of whatever runs next."""
    if isinstance(conf, dict) and "logger" not in conf and "logger" not in kwargs:
        return {**conf, "log_level": 0}
    return conf


def _quiet(cls: type) -> type:
    if getattr(cls, "quiet_in_tests", False):   # this conftest is imported twice (conftest, tests.conftest)
        return cls

    class Quiet(cls):  # type: ignore[valid-type, misc]
        quiet_in_tests = True

        def __init__(self, conf: object = None, **kwargs):
            super().__init__(_quiet_conf(conf, kwargs), **kwargs)
    Quiet.__name__ = Quiet.__qualname__ = cls.__name__
    return Quiet


def _quiet_admin() -> None:
    """AdminClient's own __init__ names its module's AdminClient (super(AdminClient, self)): it
    is wrapped in place, not subclassed."""
    cls = confluent_kafka.admin.AdminClient
    if getattr(cls, "quiet_in_tests", False):
        return
    init = cls.__init__

    def quiet_init(self, conf=None, **kwargs):
        init(self, _quiet_conf(conf, kwargs), **kwargs)
    cls.__init__ = quiet_init
    cls.quiet_in_tests = True


# Every test module imports the clients after this conftest: they get the quiet ones.
confluent_kafka.Producer = _quiet(confluent_kafka.Producer)
confluent_kafka.Consumer = _quiet(confluent_kafka.Consumer)
_quiet_admin()
AdminClient = confluent_kafka.admin.AdminClient

BOTH_MODES = pytest.mark.modes("kraft", "zk")
ZK_MODE = pytest.mark.modes("zk")
KRAFT_MODE = pytest.mark.modes("kraft")


# The session fixtures below that start real Apache Kafka; a test using one is marked real_kafka.
REAL_KAFKA_FIXTURES = {"kafka4", "kafka4_quorum", "kafka39_zk", "kafka39", "kafka4_secured"}


def pytest_configure(config) -> None:
    # Every request body the shell builds, here and in the shells the tests start, is checked
    # against the fields of every version of its API (protocol.build_request).
    os.environ[codec.STRICT_REQUESTS_ENV] = "1"
    # Every table a command prints is one it declares (registry.Command.tables: --csv-table is
    # checked against them before anything is sent).
    os.environ[registry.STRICT_TABLES_ENV] = "1"
    config.addinivalue_line("markers", "modes(*names): the sandbox modes (kraft, zk) a test runs in")
    config.addinivalue_line("markers", "real_kafka: runs against real Apache Kafka (tests/real_kafka.py)")
    config.addinivalue_line("markers", "faults: a cell of the fault matrix (tests/fault_matrix.py)")


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if REAL_KAFKA_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real_kafka)


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


# -- real Apache Kafka, one cluster of each kind per test session (tests/real_kafka.py) --------

# Their nodes' directories (logs included) are under pytest's basetemp, which keeps the last runs.

@pytest.fixture(scope="session")
def kafka4(tmp_path_factory):
    """Kafka 4.x in KRaft mode: one controller (id 100) and three brokers (1-3, racks a, b, c)."""
    from tests.real_kafka import KAFKA_4, RealKafka
    with RealKafka(KAFKA_4, controllers=1, brokers=3, racks=["a", "b", "c"],
                   root=tmp_path_factory.mktemp("kafka4")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka4_quorum(tmp_path_factory):
    """Kafka 4.x with three controllers (ids 100-102, a dynamic quorum: KIP-853) and two brokers,
    for controller failover and the quorum commands."""
    from tests.real_kafka import KAFKA_4, RealKafka, started
    with started(lambda: RealKafka(KAFKA_4, controllers=3, brokers=2, dynamic_quorum=True,
                                   root=tmp_path_factory.mktemp("kafka4-quorum"))) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka39_zk(tmp_path_factory):
    """Kafka 3.9 in ZooKeeper mode: ZooKeeper and three brokers (1-3)."""
    from tests.real_kafka import KAFKA_3, RealKafka
    with RealKafka(KAFKA_3, mode="zk", brokers=3, root=tmp_path_factory.mktemp("kafka39-zk")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka4_secured(tmp_path_factory):
    """One secured Kafka 4.x node (combined broker and controller, id 1): SASL_PLAINTEXT (PLAIN,
    SCRAM-SHA-512), SASL_SSL and SSL with required client certificates from a CA made for it,
    StandardAuthorizer with the super user admin and the ordinary user alice
    (tests/real_kafka.secured; `tls_dir` holds ca.pem and both users' certificates)."""
    from tests.real_kafka import secured
    with secured(tmp_path_factory.mktemp("kafka4-tls"), root=tmp_path_factory.mktemp("kafka4-secured")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka39(tmp_path_factory):
    """Kafka 3.9 in KRaft mode: one controller (id 100) and one broker (1), for what 3.9's KRaft
    nodes list and answer (ApiVersions, configs) beside the ZooKeeper-mode cluster."""
    from tests.real_kafka import KAFKA_3, RealKafka
    with RealKafka(KAFKA_3, controllers=1, brokers=1, root=tmp_path_factory.mktemp("kafka39")) as cluster:
        yield cluster
