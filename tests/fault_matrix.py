"""The fault matrix (issue 31): every command of the registry crossed with the faults an operator
meets, run as one-shot `kafka-shell` processes on a sandbox and on real Apache Kafka 4.4.

ROWS holds one row per command (a command added to the registry without one fails
tests/test_fault_matrix.py): a realistic invocation with its arguments, whether it reads,
mutates or stays local, and whom its answer needs (any broker, every broker, the active
controller, the leaders of a topic, a coordinator, one broker). A fault makes one node stopped,
hung or slow, puts a dead or unknown address first in the bootstrap list, delays one broker's
metadata, or leaves a group's position beyond its log's end. From the rows' needs and where the
fault is, each cell knows what a truthful answer is:

- whole (exit 0, no line about a broker that did not answer) when the fault is in nothing it
  needs, or another node can stand in;
- partial (exit 1) when it is: the line names the node (and what it was asked), and a command
  whose others answered prints their rows;
- either, for a slow node: whole, or partial with the slow node named;

and always: the process ends within --timeout plus a second (counting its own time, not the
time it waited for one of the two CPUs), no traceback, and a mutation applied at most once.

The cells of one fault run together in a pool of processes (they mostly wait); `outcomes` keeps
each cell's result, and tests assert one cell each. The suite runs a deterministic selection of
the cells (`chosen_cells`: every command, every fault several times); KAFKA_SHELL_FULL_MATRIX=1
runs them all, KAFKA_SHELL_MATRIX=fault[,fault...] or =fault:command,... only those.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.protocol import codec
from kafka_shell.connection.channel import Channel
from kafka_shell.protocol.codes import ApiKey

ROOT = Path(__file__).resolve().parent.parent
SHELL = str(ROOT / ".venv" / "bin" / "kafka-shell")

TIMEOUT_S = 3            # every cell's --timeout
GRACE_S = 1.0            # "ends within --timeout plus a second"
HARD_STOP_S = 40.0       # a cell still running then is killed (and fails: it did not end)
SLOW_MS = 900            # a slow node answers each request this late: ApiVersions and one request
                         # take most of --timeout
HUNG_MS = 120_000        # a hung node answers after every cell has given up
LAG_MS = 1500            # a lagging broker's metadata trails the controller's by this much
WORKERS = int(os.environ.get("KAFKA_SHELL_MATRIX_WORKERS", "8"))

READ, MUTATE, LOCAL = "read", "mutate", "local"
WHOLE, PARTIAL, EITHER, SAME = "whole", "partial", "either", "as healthy"

# -- the table: one row per command ------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """How one command is run in the matrix.

    `line`: the invocation; {topic} {group} {txn} {share} {streams} name the shared scene's topic
    (3 partitions, led by brokers 2, 3 and 1), classic group, transactional id, share and streams
    groups; {own} the cell's own resource (made by `setup` before the fault: a mutation never
    touches what another cell reads); {file} {dir} {empty} a file or directory of the cell;
    {hmac} {directory_id} values the setup found.
    `needs`: whom the answer needs: "any" (any live broker), "each" (every live broker),
    "controller" (the active controller), "leaders:{name}" (the leaders of that topic's
    partitions), "leader:{name}" (of its partition 0), "group:{name}" / "txn:{name}" (a
    coordinator), "preferred:{name}" (the preferred replicas of its partitions led by another,
    which a preferred election needs alive), "broker:N", "control" (the sandbox's control endpoint).
    `others`: a partial answer still has rows from the nodes that answered (printed on stdout).
    `sasl`: runs on the scene's SASL listener (delegation tokens need an authenticated principal).
    `real`: also a cell on real Kafka 4.4 (commands the real fixture can serve as written).
    `healthy_exit`: the exit code on a healthy cluster when it is not 0 (a LOCAL line that
    refuses its input before any cluster is involved).
    `verdicts`: exit codes besides 0 of a whole answer that judges the cluster (health: 3
    warnings, 4 critical); a partial answer of such a command may carry them too.
    """
    line: str
    kind: str
    needs: tuple[str, ...] = ()
    setup: str | None = None
    once: str | None = None
    others: bool = False
    sasl: bool = False
    real: bool = False
    healthy_exit: int = 0
    verdicts: tuple[int, ...] = ()


ROWS: dict[str, Row] = {
    "abort-transaction": Row("abort-transaction --topic {own} --partition 0 --start-offset 0 --yes", MUTATE,
                             ("leader:{own}",), setup="open_transaction", once="aborted_once"),
    "add-cluster": Row("add-cluster mx-added --bootstrap-server {bootstrap}", LOCAL),
    "add-controller": Row("add-controller --controller-id {observer} --controller-endpoint CONTROLLER@{observer_address} "
                          "--dry-run", READ, ("controller",)),
    "alter-client-metrics": Row("alter-client-metrics --name {own} --metrics org.apache.kafka.producer. --interval 60000",
                                MUTATE, ("controller",), real=True),
    "alter-client-quotas": Row("alter-client-quotas --entity-type users --entity-name {own} --add-config "
                               "producer_byte_rate=1048576", MUTATE, ("controller",), real=True),
    "alter-configs": Row("alter-configs --topic {own} --add-config retention.ms=86400000", MUTATE, ("controller",),
                         setup="topic", real=True),
    "alter-topic": Row("alter-topic --topic {own} --partitions 4 --blocking", MUTATE, ("controller", "each"),
                       setup="topic", once="four_partitions", real=True),
    "alter-user-scram-credentials": Row("alter-user-scram-credentials --add {own} --mechanism SCRAM-SHA-512 "
                                        "--password-env MX_PASSWORD", MUTATE, ("controller",), real=True),
    "analyze": Row("analyze --snapshots {empty} --out {dir}", LOCAL, healthy_exit=2),
    "api-versions": Row("api-versions --broker {far}", READ, ("broker:{far}",), real=True),
    "balance": Row("balance", READ, ("each",), others=True),
    "broker-ids": Row("broker-ids missing", READ, ("any",), real=True),
    "clear": Row("clear", LOCAL),
    "clusters": Row("clusters", LOCAL),
    "consume": Row("consume --topic {topic} --group {own} --from-beginning", READ, ("leaders:{topic}", "group:{own}"),
                   others=True, real=True),
    "controller-history": Row("controller-history", READ, ("any", "controller")),
    "copy-offsets": Row("copy-offsets --from-group {group} --to-group {own}", READ,
                        ("group:{group}", "group:{own}", "leaders:{topic}")),
    # --dry-run validates the change at the broker, which forwards it to the controller.
    "cordon": Row("cordon --broker 1 --dry-run", READ, ("broker:1", "controller")),
    "create-acls": Row("create-acls --allow-principal User:{own} --operation Read --topic {topic}", MUTATE,
                       ("controller",), once="one_acl"),
    "create-delegation-token": Row("create-delegation-token --max-life-time-period 86400000", MUTATE, ("controller",),
                                   sasl=True, once="one_token"),
    "create-topic": Row("create-topic --topic {own} --partitions 3 --replication-factor 2 --blocking", MUTATE,
                        ("controller", "each"), once="created", real=True),
    "delete-acls": Row("delete-acls --allow-principal User:{own} --topic {topic} --yes", MUTATE, ("controller",),
                       setup="acl"),
    "delete-client-metrics": Row("delete-client-metrics --name {own} --yes", MUTATE, ("controller",),
                                 setup="client_metrics"),
    "delete-group": Row("delete-group {own} --yes", MUTATE, ("group:{own}",), setup="consumer_group"),
    "delete-offsets": Row("delete-offsets --group {own} --topic {topic} --yes", MUTATE, ("group:{own}",),
                          setup="consumer_group", real=True),
    "delete-records": Row("delete-records --topic {own} --partition 0 --before-offset 1 --yes", MUTATE,
                          ("leader:{own}",), setup="topic", real=True),
    "delete-share-group": Row("delete-share-group {own} --yes", MUTATE, ("group:{own}",), setup="share_group"),
    "delete-share-group-offsets": Row("delete-share-group-offsets --group {own} --topic {topic} --yes", MUTATE,
                                      ("group:{own}",), setup="share_group"),
    "delete-streams-group": Row("delete-streams-group {own} --yes", MUTATE, ("group:{own}",), setup="streams_group"),
    "delete-streams-group-offsets": Row("delete-streams-group-offsets --group {own} --all-input-topics --yes", MUTATE,
                                        ("group:{own}",), setup="streams_group"),
    "delete-topic": Row("delete-topic --topic {own} --yes --blocking", MUTATE, ("controller", "each"), setup="topic",
                        once="deleted", real=True),
    "describe-acls": Row("describe-acls --topic {topic}", READ, ("any",)),
    "describe-client-metrics": Row("describe-client-metrics", READ, ("any",), real=True),
    "describe-client-quotas": Row("describe-client-quotas", READ, ("any",), real=True),
    "describe-cluster": Row("describe-cluster", READ, ("any", "controller"), real=True),
    "describe-configs": Row("describe-configs --broker {far}", READ, ("broker:{far}",), real=True),
    "describe-controller": Row("describe-controller", READ, ("controller",), real=True),
    "describe-delegation-token": Row("describe-delegation-token", READ, ("any",), sasl=True),
    "describe-features": Row("describe-features", READ, ("any",), real=True),
    "describe-group": Row("describe-group {group}", READ, ("group:{group}", "leaders:{topic}"), others=True, real=True),
    "describe-log-dirs": Row("describe-log-dirs", READ, ("each",), others=True, real=True),
    "describe-producers": Row("describe-producers --topic {topic}", READ, ("leaders:{topic}",), others=True, real=True),
    "describe-quorum": Row("describe-quorum --replication", READ, ("controller",), real=True),
    "describe-share-group": Row("describe-share-group {share}", READ, ("group:{share}",), others=True),
    "describe-streams-group": Row("describe-streams-group {streams}", READ, ("group:{streams}", "leaders:{topic}"),
                                  others=True),
    "describe-topic": Row("describe-topic --topic {topic}", READ, ("any", "controller"), others=True, real=True),
    "describe-transaction": Row("describe-transaction --transactional-id {txn}", READ, ("txn:{txn}",), real=True),
    "describe-user-scram-credentials": Row("describe-user-scram-credentials", READ, ("any",), real=True),
    "diff-configs": Row("diff-configs --all-brokers", READ, ("each",)),
    "disable-feature": Row("disable-feature --feature streams.version --dry-run", READ, ("controller",)),
    "downgrade-features": Row("downgrade-features --feature group.version=0 --dry-run", READ, ("controller",)),
    "drain-broker": Row("drain-broker 1 --dry-run", READ, ("each",)),
    # --timeout-ms: how long the controller may take over the elections (Kafka's default 30 s
    # comes on top of --timeout).
    "elect-leaders": Row("elect-leaders --election-type preferred --topic {own} --timeout-ms 900 --yes", MUTATE,
                         ("controller", "preferred:{own}"), setup="topic", real=True),
    "exit": Row("exit", LOCAL),
    "expanded": Row("expanded on", LOCAL),
    "expire-delegation-token": Row("expire-delegation-token --hmac {hmac} --yes", MUTATE, ("controller",), sasl=True,
                                   setup="token"),
    "export-configs": Row("export-configs {dir}.json", READ, ("each",), others=True),   # brokers answer it all
    "find-hanging-transactions": Row("find-hanging-transactions --topic {topic}", READ, ("leaders:{topic}",),
                                     real=True),
    "get-offsets": Row("get-offsets --topic {topic}", READ, ("leaders:{topic}",), others=True, real=True),
    "health": Row("health", READ, ("each", "controller"), others=True, verdicts=(3, 4)),
    "help": Row("help describe-topic", LOCAL),
    "import-configs": Row("import-configs {file}", READ, ("controller",), setup="configs_file"),
    "list-brokers": Row("list-brokers", READ, ("any",), real=True),
    "list-client-metrics": Row("list-client-metrics", READ, ("any",)),
    "list-groups": Row("list-groups", READ, ("each",), others=True, real=True),
    "list-share-groups": Row("list-share-groups", READ, ("each",)),
    "list-streams-groups": Row("list-streams-groups", READ, ("each",)),
    "list-topics": Row("list-topics", READ, ("any",), real=True),
    "list-transactions": Row("list-transactions", READ, ("each",), real=True),
    "output": Row("output json", LOCAL),
    "pager": Row("pager off", LOCAL),
    "preferred-controller": Row("preferred-controller show", READ, ("controller",)),
    "preferred-replica-leader-election": Row("preferred-replica-leader-election --topic {own} --timeout-ms 900", MUTATE,
                                             ("controller", "preferred:{own}"), setup="topic", real=True),
    "produce": Row("produce --topic {own} --partition 0 mx-record", MUTATE, ("leader:{own}",), setup="topic",
                   once="one_record", real=True),
    "reassign-partitions": Row("reassign-partitions --execute --reassignment-json-file {file} --blocking", MUTATE,
                               ("controller", "each"), setup="reassignment", real=True),
    "refresh": Row("refresh", READ, ("any", "controller"), real=True),
    "remove-controller": Row("remove-controller --controller-id {voter} --controller-directory-id {directory_id} "
                             "--dry-run", READ, ("controller",)),
    "renew-delegation-token": Row("renew-delegation-token --hmac {hmac} --renew-time-period 3600000", MUTATE,
                                  ("controller",), sasl=True, setup="token"),
    "reset-offsets": Row("reset-offsets --group {own} --topic {topic} --shift-by -1 --execute", MUTATE,
                         ("group:{own}", "leaders:{topic}"), setup="consumer_group", once="shifted_once", real=True),
    "reset-share-group-offsets": Row("reset-share-group-offsets --group {own} --topic {topic} --to-earliest --execute",
                                     MUTATE, ("group:{own}", "leaders:{topic}"), setup="share_group"),
    "reset-streams-group-offsets": Row("reset-streams-group-offsets --group {own} --all-input-topics --to-earliest "
                                       "--execute", MUTATE, ("group:{own}", "leaders:{topic}"), setup="streams_group"),
    "rolling-restart-plan": Row("rolling-restart-plan", READ, ("any", "controller"), real=True),
    "sandbox": Row("sandbox status", READ, ("control",)),
    "snapshot": Row("snapshot --output-dir {dir}", READ, ("each", "controller"), others=True),
    "topic": Row("topic {topic}", READ, ("any",), real=True),
    # Scoped to the scene's topic: a real cluster shared with other tests has their topics too.
    "unclean-recovery": Row("unclean-recovery --all-offline-partitions --topic {topic} --show-replica-info", READ,
                            ("any",), real=True),
    "uncordon": Row("uncordon --broker 1 --dry-run", READ, ("broker:1",)),
    "undrain-broker": Row("undrain-broker 1 --dry-run", READ, ("each",)),
    "unregister-broker": Row("unregister-broker --id 3 --dry-run", READ, ("any",)),
    "unregister-controller": Row("unregister-controller --id {observer} --dry-run", READ, ("controller",)),
    "upgrade-features": Row("upgrade-features --metadata 4.4 --dry-run", READ, ("controller",), real=True),
    "use-cluster": Row("use-cluster mx", LOCAL),
    "version-mapping": Row("version-mapping", LOCAL),
    "watch": Row("watch list-topics --count 1 --interval 100ms", READ, ("any",), real=True),
}


# -- one cluster's scene: the shared resources, and each cell's own ----------------------------

SASL_USER, SASL_PASSWORD = "admin", "admin-secret"
PASSWORD_ENV = {"MX_PASSWORD": "mx-password", "MX_SASL_PASSWORD": SASL_PASSWORD}
SASL_OPTIONS = ("-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN",
                "-X", f"sasl.username={SASL_USER}", "-X", "sasl.password=${MX_SASL_PASSWORD}")
# The shared topic's replica sets on three brokers: partition 0 led by broker 2, 1 by 3, 2 by 1
# (each broker leads one; a cell's own topics are laid out alike), two replicas each, so that
# with a broker stopped every partition keeps a leader and new ones can be placed; on two
# brokers, 0 led by 2 and 1 by 1.
THREE_BROKERS = [[2, 1], [3, 2], [1, 3]]
TWO_BROKERS = [[2, 1], [1, 2]]
RECORDS_PER_PARTITION = 2
BEYOND_END = 50          # the offset-reset fault's committed offsets: past every log's end
NAMES = {"topic": "mx", "group": "mx-g", "txn": "mx-txn", "share": "mx-sg", "streams": "mx-app"}


# Each fault's short tag in the names of the cells' own resources (a fault's own name, such as
# "bootstrap-refused", would read as a line about a refusal in the cells' output).
TAGS = {"healthy": "h", "broker-stopped": "bs", "broker-hung": "bh", "broker-slow": "bw", "bootstrap-hung": "ah",
        "bootstrap-refused": "ar", "bootstrap-unresolvable": "au", "controller-stopped": "cs", "controller-hung": "ch",
        "leader-slow": "lw", "leader-hung": "lh", "metadata-lag": "ml", "offset-reset": "or"}


def own_name(fault: str, command: str) -> str:
    return f"mx-{TAGS[fault]}-{command}"


@dataclass
class Cell:
    fault: str
    command: str
    argv: list[str] = field(default_factory=list)
    line: str = ""
    depends: set[int] = field(default_factory=set)   # the nodes its answer needs
    coordinators: set[int] = field(default_factory=set)   # of them, the coordinators of its groups
    sick: int | None = None                          # the node the fault makes sick
    expect: str = WHOLE
    config_dir: str = ""
    # the outcome
    exit: int | None = None
    stdout: str = ""
    stderr: str = ""
    elapsed_s: float = 0.0       # wall clock
    waited_cpu_s: float = 0.0    # of which waiting for a CPU (its threads' run queue delays)
    once_problem: str | None = None

    @property
    def key(self) -> str:
        return f"{self.fault}:{self.command}"

    @property
    def own(self) -> str:
        return own_name(self.fault, self.command)


class Scene:
    """The matrix's resources on one cluster (the sandbox or real Kafka), reached from
    `bootstrap` (and `sasl_bootstrap` for the rows that need a SASL login), made with Kafka's
    clients and the shell's own commands run in this process on the healthy cluster."""

    def __init__(self, bootstrap: str, workdir: Path, sasl_bootstrap: str | None = None,
                 assignment: list[list[int]] = THREE_BROKERS):
        self.bootstrap, self.sasl_bootstrap, self.workdir = bootstrap, sasl_bootstrap, workdir
        self.assignment = assignment
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        # {far}: the broker the broker faults make sick (3 of three: it leads partition 1).
        self.values: dict[str, str] = {**NAMES, "bootstrap": bootstrap, "empty": str(workdir / "empty"),
                                       "far": str(max(b for replicas in assignment for b in replicas))}
        (workdir / "empty").mkdir(parents=True, exist_ok=True)
        self.tokens_before: set[str] = set()

    # -- the shared scene --------------------------------------------------------------------

    def seed(self, every_group_type: bool = True) -> None:
        """The shared topic with records, a classic group that committed, a committed transaction;
        with `every_group_type` a share and a streams group too."""
        topic = NAMES["topic"]
        self.create_topics([topic])
        self.produce_all(topic)
        self.commit(NAMES["group"], topic, RECORDS_PER_PARTITION)
        self.committed_transaction(NAMES["txn"], topic)
        if every_group_type:
            self.share_groups([NAMES["share"]])
            self.streams_groups([NAMES["streams"]])

    def create_topics(self, names: list[str]) -> None:
        if not names:
            return
        futures = self.admin.create_topics([NewTopic(n, len(self.assignment), replica_assignment=self.assignment)
                                            for n in names])
        for f in futures.values():
            f.result(60)
        wait_until(f"{len(names)} topics led as laid out", lambda: all(self.leaders(n) == [a[0] for a in self.assignment]
                                                                      for n in names))

    def leaders(self, topic: str) -> list[int]:
        """The leaders of a topic's partitions ([] when there is no such topic); a Metadata
        request that never creates it (a client's may, with auto.create.topics.enable)."""
        [t] = self.metadata(self.bootstrap.split(",")[0], [topic])["topics"]
        return [] if t["error_code"] else self.leaders_via(self.bootstrap.split(",")[0], topic)

    def produce_all(self, topic: str) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "log_level": 0, "acks": "all"})
        for p in range(len(self.assignment)):
            for i in range(RECORDS_PER_PARTITION):
                producer.produce(topic, value=f"{topic}-{p}-{i}".encode(), key=f"k{i}".encode(), partition=p)
        assert producer.flush(60) == 0, f"records of {topic} not acknowledged"

    def commit(self, group: str, topic: str, offset: int, member: bool = True) -> None:
        """The group commits `offset` for every partition of `topic` and has no member after:
        as a consumer that joined and left (Kafka 4.4 lists no group that only an admin's
        commit made), or without a member (`member` False: a streams group)."""
        partitions = [TopicPartition(topic, p, offset) for p in range(len(self.assignment))]
        if not member:
            for f in self.admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)]).values():
                f.result(60)
            return
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
                             "group.protocol": "classic", "log_level": 0})
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 60
            while not consumer.assignment():
                assert time.monotonic() < deadline, f"{group} got no assignment"
                consumer.poll(0.1)
            consumer.commit(offsets=partitions, asynchronous=False)
        finally:
            consumer.close()

    def committed_transaction(self, transactional_id: str, topic: str) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "log_level": 0,
                             "transactional.id": transactional_id})
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce(topic, value=b"in a transaction", partition=0)
        producer.commit_transaction(60)

    def share_groups(self, groups: list[str]) -> None:
        """Share groups with no members (a share consumer joined each, then left)."""
        def join(group: str) -> None:
            consumer = ShareConsumer({"bootstrap.servers": self.bootstrap, "group.id": group, "log_level": 0})
            try:
                consumer.subscribe([NAMES["topic"]])
                deadline = time.monotonic() + 60
                while group not in self.listed_groups():
                    assert time.monotonic() < deadline, f"share group {group} not made"
                    consumer.poll(0.2)
            finally:
                consumer.close()
        run_all(join, groups)

    def listed_groups(self) -> set[str]:
        code, out, _ = self.shell("list-groups -o json")
        return {g["group"] for g in json.loads(out).get("groups", [])} if code == 0 and out.strip() else set()

    def streams_groups(self, groups: list[str]) -> None:
        """Streams groups with no members and committed offsets (a member joined with a topology
        reading the shared topic, then left)."""
        from tests.streams_scenarios import _beat, _join, _topology

        def join(group: str) -> None:
            coordinator = self.coordinator(group, 0)
            try:
                member = uuid.uuid4().hex
                joined = retry_request(coordinator, ApiKey.STREAMS_GROUP_HEARTBEAT,
                                       _join(group, member, _topology(NAMES["topic"], group)), 1)
                retry_request(coordinator, ApiKey.STREAMS_GROUP_HEARTBEAT, _beat(group, member, -1), 1)
                assert joined["error_code"] == 0, joined
            finally:
                coordinator.close()
            self.commit(group, NAMES["topic"], RECORDS_PER_PARTITION, member=False)
        run_all(join, groups)

    def coordinator(self, key: str, key_type: int) -> Channel:
        host, port = self.bootstrap.split(",")[0].rsplit(":", 1)
        any_broker = Channel(host, int(port))
        try:
            found = retry_request(any_broker, ApiKey.FIND_COORDINATOR,
                                  {"key_type": key_type, "coordinator_keys": [key]}, 4)["coordinators"][0]
        finally:
            any_broker.close()
        return Channel(found["host"], found["port"])

    def coordinator_id(self, key: str, key_type: int, via: str) -> int:
        host, port = via.rsplit(":", 1)
        channel = Channel(host, int(port))
        try:
            return retry_request(channel, ApiKey.FIND_COORDINATOR,
                                 {"key_type": key_type, "coordinator_keys": [key]}, 4)["coordinators"][0]["node_id"]
        finally:
            channel.close()

    # -- each cell's own resources -----------------------------------------------------------

    def prepare(self, cells: list[Cell], sick: int | None = None) -> None:
        """Make what each cell's row needs of its own (on the healthy cluster, before the fault
        that makes `sick` sick)."""
        by_setup: dict[str, list[Cell]] = {}
        for cell in cells:
            setup = ROWS[cell.command].setup
            if setup:
                by_setup.setdefault(setup, []).append(cell)
        topics = [c.own for s in ("topic", "open_transaction", "reassignment", "configs_file")
                  for c in by_setup.get(s, [])]
        self.create_topics(topics)
        run_all(lambda c: self.produce_all(c.own), [c for c in by_setup.get("topic", [])])
        run_all(lambda c: self.commit(c.own, NAMES["topic"], RECORDS_PER_PARTITION), by_setup.get("consumer_group", []))
        run_all(self._open_transaction, by_setup.get("open_transaction", []))
        self.share_groups([c.own for c in by_setup.get("share_group", [])])
        self.streams_groups([c.own for c in by_setup.get("streams_group", [])])
        for cell in by_setup.get("acl", []):
            self.shell(f"create-acls --allow-principal User:{cell.own} --operation Read --topic {NAMES['topic']}")
        for cell in by_setup.get("client_metrics", []):
            self.shell(f"alter-client-metrics --name {cell.own} --metrics org.apache.kafka.producer. --interval 60000")
        for cell in by_setup.get("token", []):
            self.values[f"hmac:{cell.key}"] = self.create_token()
        for cell in by_setup.get("reassignment", []):
            # Partition 0 shrinks and loses its leader: [2, 1] -> [1] (real Kafka 4.4 judged such a
            # move too early one run in six); to [2] when the fault stops broker 1 (a plan naming
            # a broker that is gone is refused, as Kafka's tool refuses it).
            target = [b for b in self.assignment[0][1:] if b != sick] or [self.assignment[0][0]]
            plan = {"version": 1, "partitions": [{"topic": cell.own, "partition": 0, "replicas": target}]}
            path = self.workdir / f"{cell.own}.json"
            path.write_text(json.dumps(plan))
            self.values[f"file:{cell.key}"] = str(path)
        for cell in by_setup.get("configs_file", []):
            # A file of export-configs naming the cell's own topic only (what other cells change
            # meanwhile is no concern of it): its import changes one config.
            path = self.workdir / f"{cell.own}.json"
            path.write_text(json.dumps({"format": "kafka-shell configs", "version": 1,
                                        "topics": {cell.own: {"retention.ms": "86400000"}}}))
            self.values[f"file:{cell.key}"] = str(path)
        if self.sasl_bootstrap:
            self.tokens_before = {t["token_id"] for t in self.tokens()}

    def _open_transaction(self, cell: Cell) -> None:
        """An open transaction at offset 0 of the cell's topic's partition 0 (a producer that
        began it and went away)."""
        from tests import txn_scenarios
        c = txn_scenarios.Cluster(self.bootstrap, topic=cell.own)
        try:
            init = c.init_producer_id(cell.own, timeout_ms=900_000)
            pid, epoch = init["producer_id"], init["producer_epoch"]
            assert c.add_partitions(cell.own, pid, epoch) == 0
            assert c.produce(txn_scenarios.batch(0, epoch, pid, 1, transactional=True), transactional_id=cell.own)[0] == 0
        finally:
            c.close()

    def create_token(self) -> str:
        code, out, err = self.shell("create-delegation-token --max-life-time-period 86400000 -o json", sasl=True)
        assert code == 0, err
        return next(iter(json.loads(out).values()))[0]["hmac"]

    def tokens(self) -> list[dict]:
        code, out, err = self.shell("describe-delegation-token -o json", sasl=True)
        assert code == 0, err
        return next(iter(json.loads(out).values()), []) if out.strip() else []

    def shell(self, line: str, sasl: bool = False, bootstrap: str | None = None) -> tuple[int, str, str]:
        """The shell's own command, in this process, on the healthy cluster (or through
        `bootstrap`: the brokers a fault left well)."""
        import io

        from kafka_shell.face.runner import run_line
        from kafka_shell.connection.session import Session, Target
        props = {}
        bootstrap = bootstrap or self.bootstrap
        if sasl:
            bootstrap = self.sasl_bootstrap or bootstrap
            props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                     "sasl.username": SASL_USER, "sasl.password": SASL_PASSWORD}
        out, err = io.StringIO(), io.StringIO()
        session = Session(target=Target(bootstrap, props, timeout_s=30), stdout=out, stderr=err, yes=True)
        try:
            return run_line(session, line), out.getvalue(), err.getvalue()
        finally:
            session.close()

    def delete_own(self, fault: str) -> None:
        """The topics the cells of `fault` made go (a partition a reassignment left on one broker
        would be offline under a later fault that stops that broker)."""
        prefix = f"mx-{TAGS[fault]}-"
        names = [t for t in self.admin.list_topics(timeout=30).topics if t.startswith(prefix)]
        for f in (self.admin.delete_topics(names, operation_timeout=30).values() if names else ()):
            f.result(60)

    def sasl_addresses(self) -> dict[int, str]:
        """Each broker's address on the SASL listener (the rows that log in are told of it)."""
        if not self.sasl_bootstrap:
            return {}
        return {b["node_id"]: f"{b['host']}:{b['port']}" for b in self.metadata(self.sasl_bootstrap.split(",")[0], [],
                                                                                   sasl=True)["brokers"]}

    # -- what each cell needs ----------------------------------------------------------------

    def line(self, cell: Cell) -> str:
        values = {**self.values, "own": cell.own, "file": self.values.get(f"file:{cell.key}", ""),
                  "hmac": self.values.get(f"hmac:{cell.key}", ""), "dir": str(self.workdir / f"{cell.own}-dir")}
        return ROWS[cell.command].line.format(**values)

    def depends(self, cell: Cell, probe: str, controller: int) -> set[int]:
        """The nodes the cell's answer needs, as the cluster is now (asked of `probe`)."""
        found: set[int] = set()
        cell.coordinators = set()
        for need in ROWS[cell.command].needs:
            kind, _, what = need.partition(":")
            name = what.format(own=cell.own, **{**NAMES, "far": self.values["far"]})
            if kind == "each":
                found |= set(self.live_brokers(probe))
            elif kind == "controller":
                found.add(controller)
            elif kind in ("leaders", "leader"):
                leaders = self.leaders_via(probe, name)
                found |= set(leaders[:1] if kind == "leader" else leaders)
            elif kind == "preferred":   # an election moves leadership back to them
                leaders = self.leaders_via(probe, name)
                found |= {replicas[0] for replicas, leader in zip(self.assignment, leaders) if leader != replicas[0]}
            elif kind in ("group", "txn"):
                coordinator = self.coordinator_id(name, 0 if kind == "group" else 1, probe)
                found.add(coordinator)
                cell.coordinators.add(coordinator)
            elif kind == "broker":
                found.add(int(name))
        return found

    def live_brokers(self, via: str) -> list[int]:
        return sorted(b["node_id"] for b in self.metadata(via, [])["brokers"])

    def leaders_via(self, via: str, topic: str) -> list[int]:
        [t] = self.metadata(via, [topic])["topics"]
        return [p["leader_id"] for p in sorted(t["partitions"], key=lambda p: p["partition_index"])]

    def metadata(self, via: str, topics: list[str], sasl: bool = False) -> dict:
        host, port = via.rsplit(":", 1)
        props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": SASL_USER,
                 "sasl.password": SASL_PASSWORD} if sasl else {}
        channel = Channel(host, int(port), props)
        try:
            return channel.request(ApiKey.METADATA, {"topics": [{"name": t} for t in topics],
                                                     "allow_auto_topic_creation": False}, 9)
        finally:
            channel.close()

    # -- a mutation applied at most once -----------------------------------------------------

    def once(self, cell: Cell) -> str | None:
        """What is wrong with the cell's mutation as the healed cluster shows it (None: nothing)."""
        check = ROWS[cell.command].once
        if check is None:
            return None
        return getattr(self, f"_once_{check}")(cell)

    def _log_end(self, topic: str, partition: int) -> int:
        # Closed here: a librdkafka consumer left to the garbage collector may be destroyed on
        # another thread, which crashes the process.
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "mx-probe", "log_level": 0})
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
        finally:
            consumer.close()

    def _once_one_record(self, cell: Cell) -> str | None:
        end = self._log_end(cell.own, 0) - RECORDS_PER_PARTITION
        if end > 1 or (cell.exit == 0 and end != 1):
            return f"{end} records written by one produce of one record (exit {cell.exit})"
        return None

    def _once_aborted_once(self, cell: Cell) -> str | None:
        end = self._log_end(cell.own, 0)
        if end > 2 or (cell.exit == 0 and end != 2):
            return f"log end {end} after aborting the transaction of 1 record (exit {cell.exit}): 2 is one marker"
        return None

    def _once_four_partitions(self, cell: Cell) -> str | None:
        count = len(self.leaders(cell.own))
        if cell.exit == 0 and count != 4:
            return f"{cell.own} has {count} partitions after exit 0"
        return None

    def _once_created(self, cell: Cell) -> str | None:
        exists = bool(self.leaders(cell.own))
        if cell.exit == 0 and not exists:
            return f"{cell.own} does not exist after exit 0"
        return None

    def _once_deleted(self, cell: Cell) -> str | None:
        if cell.exit == 0 and self.leaders(cell.own):
            return f"{cell.own} still exists after exit 0"
        return None

    def committed(self, group: str, topic: str) -> list[int]:
        """The group's committed offset of each partition of `topic` (-1: none), asked of its
        coordinator with our own OffsetFetch: librdkafka's AdminClient crashes the process
        (SIGSEGV in rd_kafka_cgrp_op, an admin client having no group; librdkafka issue 5040)
        when the answer is NOT_COORDINATOR, as a real cluster's is while the coordinator moves."""
        channel = self.coordinator(group, 0)
        body = {"groups": [{"group_id": group, "topics": [{"name": topic,
                                                           "partition_indexes": list(range(len(self.assignment)))}]}],
                "require_stable": True}
        try:
            deadline = time.monotonic() + 60
            while True:
                [answer] = channel.request(ApiKey.OFFSET_FETCH, body, 8)["groups"]
                if answer["error_code"] not in (14, 15, 16) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        finally:
            channel.close()
        assert answer["error_code"] == 0, f"OffsetFetch of {group}: error {answer['error_code']}"
        [found] = answer["topics"]
        return [p["committed_offset"] for p in sorted(found["partitions"], key=lambda p: p["partition_index"])]

    def _once_shifted_once(self, cell: Cell) -> str | None:
        offsets = self.committed(cell.own, NAMES["topic"])
        want = RECORDS_PER_PARTITION - 1
        if any(o < want for o in offsets) or (cell.exit == 0 and offsets != [want] * len(self.assignment)):
            return f"offsets {offsets} after one shift by -1 from {RECORDS_PER_PARTITION} (exit {cell.exit})"
        return None

    def _once_one_acl(self, cell: Cell) -> str | None:
        code, out, err = self.shell(f"describe-acls --principal User:{cell.own} -o json")
        count = sum(len(rows) for rows in json.loads(out).values()) if code == 0 and out.strip() else 0
        return f"{count} ACLs for one create-acls" if count > 1 else None

    def _once_one_token(self, cell: Cell) -> str | None:
        made = len({t["token_id"] for t in self.tokens()} - self.tokens_before)
        if made > 1 or (cell.exit == 0 and made != 1):
            return f"{made} tokens made by one create-delegation-token (exit {cell.exit})"
        return None


def retry_request(channel: Channel, api_key: int, body: dict, version: int, deadline_s: float = 60) -> dict:
    """A request asked again while the answer is a retriable error (a coordinator loading)."""
    deadline = time.monotonic() + deadline_s
    while True:
        answer = channel.request(api_key, body, version)
        codes = [answer.get("error_code", 0)] + [c.get("error_code", 0) for c in answer.get("coordinators", [])]
        if not set(codes) & {14, 15, 16} or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def run_all(fn: Callable, items: list) -> None:
    """fn(item) for each item, in parallel; the first failure is raised."""
    if not items:
        return
    with ThreadPoolExecutor(min(len(items), 8)) as pool:
        for future in [pool.submit(fn, item) for item in items]:
            future.result()


def wait_until(what: str, done: Callable[[], bool], timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.1)


# -- addresses for the bootstrap faults --------------------------------------------------------


@contextmanager
def silent_address() -> Iterator[str]:
    """An address that accepts connections and never answers (what a stopped JVM looks like):
    a listening socket nobody accepts from; the kernel completes the handshakes."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(512)
    try:
        yield f"127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


@contextmanager
def refused_address() -> Iterator[str]:
    """An address where nothing listens: a port bound (so nobody else takes it) but not listening."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    try:
        yield f"127.0.0.1:{s.getsockname()[1]}"
    finally:
        s.close()


UNRESOLVABLE = "nosuchhost.invalid:9092"


# -- running the cells ---------------------------------------------------------------------------


def argv(cell: Cell, bootstrap: str, line: str) -> list[str]:
    sasl = SASL_OPTIONS if ROWS[cell.command].sasl else ()
    return [SHELL, "--bootstrap-server", bootstrap, "--timeout", str(TIMEOUT_S), *sasl, "--command", line]


def _run_queue_waits(pid: int, waits: dict[str, float]) -> None:
    """Update each thread's seconds spent waiting on a run queue (Linux schedstat) so far."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tasks:
        try:
            waits[tid] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            pass   # the thread ended: its last sample stands


def run_cell(cell: Cell) -> Cell:
    """Run the cell's kafka-shell to its end; its time, and the part spent waiting for a CPU."""
    env = {**os.environ, **PASSWORD_ENV, "KAFKA_SHELL_CONFIG_DIR": cell.config_dir}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        # Below the cluster's priority: the cluster answers at once, the cells share what is left.
        proc = subprocess.Popen(["nice", "-n", "10", *cell.argv], stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=ROOT)
        waits: dict[str, float] = {}
        while proc.poll() is None:
            _run_queue_waits(proc.pid, waits)
            if time.monotonic() - start > HARD_STOP_S:
                proc.kill()
            time.sleep(0.05)
        cell.elapsed_s = time.monotonic() - start
        # A thread waiting for a CPU holds up the threads waiting on it: every thread's waits
        # count (waits of threads side by side count twice: only ever in the cell's favour).
        cell.waited_cpu_s = min(sum(waits.values()), cell.elapsed_s)
        cell.exit = proc.returncode
        out.seek(0)
        err.seek(0)
        cell.stdout = out.read().decode(errors="replace")
        cell.stderr = err.read().decode(errors="replace")
    return cell


def run_cells(cells: list[Cell]) -> None:
    """Every cell, WORKERS at a time; a cell starts only when a CPU has room for it (its start
    costs about half a second of CPU, and a starved cluster would answer late)."""
    gate = threading.Lock()

    def run(cell: Cell) -> Cell:
        with gate:
            wait_for_idle_cpu()
        return run_cell(cell)

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(run, cells))


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of all CPUs since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)


def wait_for_idle_cpu(idle_share: float = 0.3, most_s: float = 3.0) -> None:
    """Wait until the CPUs were at least `idle_share` idle over 0.1 s (at most `most_s`)."""
    deadline = time.monotonic() + most_s
    idle, total = _cpu_times()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        idle2, total2 = _cpu_times()
        if total2 > total and (idle2 - idle) / (total2 - total) >= idle_share:
            return
        idle, total = idle2, total2


def config_dir(root: Path, cell: Cell, bootstrap: str) -> str:
    """The cell's own config directory, with the named cluster `mx` (use-cluster)."""
    path = root / "config" / cell.own
    path.mkdir(parents=True, exist_ok=True)
    (path / "clusters.json").write_text(json.dumps({"clusters": {"mx": {"bootstrap": bootstrap}}}))
    (path / "clusters.json").chmod(0o600)
    return str(path)


# Set (to 1): every cell of the matrix; unset, the suite runs a selection (`chosen_cells`: CI's time).
FULL_ENV = "KAFKA_SHELL_FULL_MATRIX"
MATRIX_ENV = "KAFKA_SHELL_MATRIX"   # fault[,fault...] or fault:command,...: only those cells


def chosen_cells(cells: list[tuple[str, str]], spread: int, every_healthy: bool = True,
                 left_out: dict[tuple[str, str], str] | None = None,
                 faults: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """The cells a run takes: those KAFKA_SHELL_MATRIX names; all with KAFKA_SHELL_FULL_MATRIX=1;
    else the suite's `default_cells`."""
    if os.environ.get(MATRIX_ENV):
        return [(f, c) for f, c in cells if selected(f, c)]
    if os.environ.get(FULL_ENV):
        return cells
    return default_cells(cells, spread, every_healthy, left_out, faults)


def default_cells(cells: list[tuple[str, str]], spread: int, every_healthy: bool = True,
                  left_out: dict[tuple[str, str], str] | None = None,
                  faults: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """The suite's cells (deterministic): every cell of the healthy cluster when `every_healthy`
    (each command once: nothing waits there), every cell of a LOCAL row (it starts no cluster work), and of each other
    fault every `spread`-th command of the registry, the fault's place shifting which: each
    command meets about one fault in `spread`, each fault one command in `spread`. Not the
    cells `left_out` (a failure not mended yet -> what it is); only the `faults` given (None: all)."""
    cells = [(f, c) for f, c in cells if faults is None or f in faults]
    order = list(dict.fromkeys(f for f, _ in cells))
    place = {c: j for j, c in enumerate(sorted(ROWS))}
    return [(f, c) for f, c in cells if (f, c) not in (left_out or {}) and (
            (f == "healthy" and every_healthy) or ROWS[c].kind == LOCAL or (place[c] + order.index(f)) % spread == 0)]


def selected(fault: str, command: str) -> bool:
    """Whether KAFKA_SHELL_MATRIX (fault, fault:command, ... ; unset: everything) runs the cell."""
    chosen = [c.strip() for c in os.environ.get(MATRIX_ENV, "").split(",") if c.strip()]
    return not chosen or fault in chosen or f"{fault}:{command}" in chosen


# -- what a cell's outcome must be --------------------------------------------------------------

FIRST_CONTROLLER = 100   # the matrix clusters' KRaft controller ids start here; brokers are 1-3
API_NAMES = sorted({codec.api_name(k) for k in ApiKey}, key=len, reverse=True)
BLAME = re.compile(r"did not answer|not answer|timed out|no answer|not reachable|cannot reach|not available|"
                   r"refused|unreachable", re.I)
# A node the cluster itself reports down was not asked: saying so is what it "asked".
DOWN = re.compile(r"not live|is down|fenced|offline|no leader|not available", re.I)
RETRIED_MUTATION = re.compile(r"already exists|does not exist|not found|no such|is not an? ", re.I)


def names_node(text: str, node: int, addresses: list[str]) -> bool:
    if re.search(rf"\b(broker|controller|node|leader)\s+{node}\b", text, re.I):
        return True
    return any(a in text for a in addresses)


def problems(cell: Cell, address_of: Callable[[int], list[str]], healthy_exit: int | None = None) -> list[str]:
    """Everything wrong with a cell's outcome (empty: the cell passes)."""
    row = ROWS[cell.command]
    found: list[str] = []
    text = cell.stdout + cell.stderr
    own_time = cell.elapsed_s - cell.waited_cpu_s
    if cell.exit is None or own_time > TIMEOUT_S + GRACE_S:
        found.append(f"took {own_time:.1f} s (of {cell.elapsed_s:.1f} s wall clock; "
                     f"{cell.waited_cpu_s:.1f} s waiting for a CPU) with --timeout {TIMEOUT_S}")
    if "Traceback" in text or "Internal error" in text:
        found.append("a traceback or internal error")
    if cell.expect == SAME:
        want = row.healthy_exit if healthy_exit is None else healthy_exit
        if cell.exit != want:
            found.append(f"exit {cell.exit}, where the healthy cluster gives {want}")
        return found
    whole = (0, *row.verdicts)
    if cell.exit not in (1, *whole):
        found.append(f"exit {cell.exit} (0: whole answer, 1: partial)")
    blamed = [n for n in cell.depends if names_node(cell.stderr, n, address_of(n))]
    if any(n >= FIRST_CONTROLLER for n in cell.depends) and "controller" in cell.stderr.lower():
        # What a broker forwards to the active controller: the broker asked is named, and the
        # line says the controller behind it did not answer (the shell cannot tell which one).
        blamed += [b for b in range(1, FIRST_CONTROLLER) if names_node(cell.stderr, b, address_of(b))]
    if cell.expect == WHOLE and cell.exit not in whole:
        found.append(f"exit {cell.exit} where the answer can be whole")
    if cell.exit == 0 and BLAME.search(cell.stderr):
        found.append("exit 0 with a line saying something did not answer")
    if cell.expect == PARTIAL and cell.exit == 0:
        found.append("exit 0 though a node its answer needs did not answer")
    if cell.fault == "offset-reset" and cell.expect == PARTIAL:
        # Not a node that failed: the position outside the log is what must be said.
        if cell.exit != 1 or "outside the log" not in cell.stderr:
            found.append(f"exit {cell.exit}, not 1 with the offset reset said ('outside the log')")
    elif cell.exit == 1 and cell.expect in (PARTIAL, EITHER):
        if not blamed:
            found.append(f"does not name the node that did not answer ({', '.join(map(str, sorted(cell.depends)))})")
        if not any(name in cell.stderr for name in API_NAMES) and not DOWN.search(cell.stderr):
            found.append("does not say what it asked (the request's name)")
        # A group's coordinator holds all of what its rows are made of: when it is the sick node,
        # no other node has any of them to print.
        if row.others and cell.sick not in cell.coordinators and not cell.stdout.strip():
            found.append("prints nothing of what the others answered")
    if row.kind == MUTATE and RETRIED_MUTATION.search(cell.stderr):
        found.append("a mutation that finds its own change (sent twice?)")
    if cell.once_problem:
        found.append(cell.once_problem)
    return found


def report(cell: Cell, found: list[str]) -> str:
    return (f"[{cell.key}] {'; '.join(found)}\n  $ {' '.join(cell.argv[1:])}\n  exit {cell.exit}, "
            f"{cell.elapsed_s:.1f} s, expected {cell.expect} (needs nodes {sorted(cell.depends)})\n"
            f"  stdout: {cell.stdout[-800:]!r}\n  stderr: {cell.stderr[-1500:]!r}")


# -- a cluster's faults, a fault at a time ---------------------------------------------------------


class Matrix:
    """The cells of one cluster, run a fault at a time (lazily: the first test of a fault runs
    all its cells), the fault healed before the next. A cluster kind says how it makes each
    fault (`fault`), which node it makes sick (`sick_node`), and how it heals (`restore`)."""

    def __init__(self, scene: Scene, workdir: Path, cells: list[tuple[str, str]]):
        self.scene, self.workdir, self.cells = scene, workdir, cells
        self.outcomes: dict[str, dict[str, tuple[Cell, list[str]]]] = {}
        self.broken: dict[str, str] = {}

    # what a cluster kind provides
    def close(self) -> None:
        """Leave the cluster as the matrix found it (or stop it)."""

    def fault(self, name: str):
        """A context manager making the fault; it yields the address to put first in the
        bootstrap list (or None)."""
        raise NotImplementedError

    def sick_node(self, fault: str) -> tuple[int | None, bool]:
        """The node the fault makes sick, and whether the cluster's state changes with it
        (leaders or the active controller move): then the cells' needs are found afterwards."""
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def active_controller(self) -> int:
        raise NotImplementedError

    def addresses(self) -> dict[int, str]:
        """Every node's id -> host:port (brokers, and controllers where they have a listener)."""
        raise NotImplementedError

    # the run
    def outcome(self, fault: str, command: str) -> tuple[Cell, list[str]]:
        if fault in self.broken:
            raise AssertionError(f"the {fault} fault could not be run: {self.broken[fault]}")
        if fault not in self.outcomes:
            try:
                self.outcomes[fault] = self._run(fault)
            except Exception as exc:
                self.broken[fault] = f"{type(exc).__name__}: {exc}"   # every cell of it says so, none runs it again
                raise
        return self.outcomes[fault][command]

    def _run(self, fault: str) -> dict[str, tuple[Cell, list[str]]]:
        cells = [Cell(fault, command) for f, command in self.cells if f == fault and selected(fault, command)]
        sick, state_changes = self.sick_node(fault)
        self.scene.prepare(cells, sick)
        if fault == "offset-reset":
            for group in (NAMES["group"], own_name(fault, "consume")):
                self.scene.commit(group, NAMES["topic"], BEYOND_END)
        probe = 2 if sick == 1 else 1   # the broker asked for the cells' needs: never the sick one
        if not state_changes:
            self._resolve(cells, probe)
        with self.fault(fault) as first:
            if state_changes:
                self._resolve(cells, probe)
            for cell in cells:
                row = ROWS[cell.command]
                bootstrap = self.scene.sasl_bootstrap if row.sasl else self.scene.bootstrap
                cell.line = self.scene.line(cell)
                cell.argv = argv(cell, f"{first},{bootstrap}" if first else bootstrap, cell.line)
                cell.config_dir = config_dir(self.workdir, cell, self.scene.bootstrap)
                cell.expect = expectation(fault, cell, sick)
                cell.sick = sick
            run_cells(cells)
        self.restore()
        for cell in cells:
            cell.once_problem = self.scene.once(cell)
        self.scene.delete_own(fault)
        addresses = self.addresses()
        sasl = self.scene.sasl_addresses()
        return {c.command: (c, problems(c, lambda n: [a for a in (addresses.get(n), sasl.get(n)) if a]))
                for c in cells}

    def _resolve(self, cells: list[Cell], probe: int) -> None:
        address = self.addresses()[probe]
        controller = self.active_controller()
        for cell in cells:
            cell.depends = self.scene.depends(cell, address, controller)


@contextmanager
def open_matrix(make: Callable[[Path], Matrix], workdir: Path) -> Iterator[Matrix]:
    matrix = make(workdir)
    try:
        yield matrix
    finally:
        matrix.close()
        shutil.rmtree(workdir, ignore_errors=True)


def expectation(fault: str, cell: Cell, sick: int | None) -> str:
    """What a truthful answer is under the fault: whole unless the sick node is one the answer
    needs; then partial, or either for a node that is only slow. A local command answers as it
    does on a healthy cluster; consume under an offset reset says so and stops (partial)."""
    if ROWS[cell.command].kind == LOCAL:
        return SAME
    if fault == "offset-reset":
        return PARTIAL if cell.command == "consume" else WHOLE
    if sick is None or sick not in cell.depends:
        return WHOLE
    return EITHER if fault.endswith("-slow") else PARTIAL
