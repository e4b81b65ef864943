"""`broker-ids ACTION`: broker identity after a lost disk or a replaced machine (KIP-426).

A broker that comes back without its meta.properties gets a new id, and every partition that
named the old id stays one replica short. `missing` finds those ids from one fresh read of the
cluster (Metadata for the replica sets, DescribeCluster with fenced brokers for registrations).
The KIP's host -> id mapping lives in the cluster itself, in a compacted topic (`__broker_hosts`
by default): key the host name, value `{"version": 0, "broker.id": N}`. `record` writes it from
the registrations, `hosts` lists it, `suggest` applies the KIP's procedure for a broker starting
without an id, and `gc` removes the entries the KIP calls garbage.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_shell.codes import ApiKey
from kafka_shell.errors import KafkaCallError, UsageError, kafka_error_message
from kafka_shell.metadata import ClusterSnapshot
from kafka_shell.operations import debug, topic_min_isr
from kafka_shell.registry import Option, command
from kafka_shell.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.session import Session

MAPPING_TOPIC = "__broker_hosts"
MAPPING_VERSION = 0
ACTIONS = {
    "missing": "Ids that replica sets name but no live broker holds, and what they cost.",
    "hosts": "The host -> id mapping, each entry live, missing or garbage.",
    "record": "Write the live brokers' hosts to the mapping (only what changed).",
    "suggest": "The id a broker starting on --host without an id should take (KIP-426).",
    "gc": "Remove garbage mapping entries (host g -> N while N is live on host h != g).",
}


@dataclass(frozen=True)
class Registrations:
    """Who holds which id now: live (registered, unfenced) and fenced brokers, id -> host."""
    live: dict[int, str]
    fenced: dict[int, str]


@command("broker-ids",
         Option("action", choices=tuple(ACTIONS), required=True, help="What to do."),
         Option("--host", metavar="HOST", help="suggest: the host name of the starting broker."),
         Option("--mapping-topic", default=MAPPING_TOPIC, metavar="TOPIC",
                help=f"The compacted topic holding the host -> id mapping (default {MAPPING_TOPIC})."),
         Option("--dry-run", flag=True, help="record, gc: show what would change; change nothing."),
         Option("--yes", flag=True, help="gc: do not ask for confirmation."),
         help="Broker ids lost with a disk or a machine, and the host -> id mapping of KIP-426.",
         description="\n".join(f"  {a}: {h}" for a, h in ACTIONS.items()) +
         "\n  The mapping is a compacted topic any tool can read: key the host name, value "
         '{"version": 0, "broker.id": N}.',
         examples=("broker-ids missing", "broker-ids missing -o json", "broker-ids record --dry-run",
                   "broker-ids hosts", "broker-ids suggest --host broker-3.example.com",
                   "broker-ids gc --yes"))
def broker_ids(session: Session, args: dict) -> Result:
    action = args["action"]
    if action != "suggest" and args["host"] is not None:
        raise UsageError(f"--host is for broker-ids suggest, not {action}")
    if action == "suggest" and not args["host"]:
        raise UsageError("broker-ids suggest needs --host HOST (the host name of the starting broker)")
    if action not in ("record", "gc") and (args["dry_run"] or args["yes"]):
        raise UsageError(f"--dry-run and --yes are for broker-ids record and gc, not {action}")
    if action == "missing":
        return missing(session, args["mapping_topic"])
    raise UsageError(f"broker-ids {action} is not available yet")


# -- reading the cluster -----------------------------------------------------------------------


def registrations(session: Session, snap: ClusterSnapshot) -> Registrations:
    """DescribeCluster with fenced brokers (KIP-1073, v2): a stopped KRaft broker stays
    registered but fenced. Where the cluster cannot tell, the Metadata brokers are the live ones."""
    if not session.conn.supports(ApiKey.DESCRIBE_CLUSTER, 2):
        return Registrations({b.id: b.host for b in snap.brokers.values()}, {})
    debug(session, "DescribeCluster request (include_fenced_brokers)")
    answer = session.conn.any_broker_request(
        ApiKey.DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False,
                                  "include_fenced_brokers": True}, version=2)
    if answer.get("error_code"):
        raise KafkaCallError(kafka_error_message(answer["error_code"], "", answer.get("error_message") or ""),
                             code=answer["error_code"])
    live: dict[int, str] = {}
    fenced: dict[int, str] = {}
    for b in answer.get("brokers", []):
        (fenced if b.get("is_fenced") else live)[b["broker_id"]] = b["host"]
    return Registrations(live, fenced)


# -- missing -----------------------------------------------------------------------------------


def missing(session: Session, mapping_topic: str) -> Result:
    snap = session.conn.read()
    regs = registrations(session, snap)
    lost: dict[int, list] = {}   # id -> partitions naming it
    for topic in snap.topics.values():
        for p in topic.partitions:
            for r in p.replicas:
                if r not in regs.live:
                    lost.setdefault(r, []).append(p)
    if not lost:
        return Result(tables=[Table(MISSING_COLUMNS, [], name="missing"),
                              Table(PARTITION_COLUMNS, [], name="partitions")],
                      messages=["No missing broker ids: every id in a replica set is a live broker."])
    hosts = last_hosts(session, snap, mapping_topic, regs)
    min_isr = topic_min_isr(session, sorted({p.topic for ps in lost.values() for p in ps}))
    summary, detail = [], []
    for broker_id in sorted(lost):
        parts = lost[broker_id]
        counts = loss_counts(parts, regs, min_isr)
        state = "fenced" if broker_id in regs.fenced else "not registered"
        summary.append([broker_id, state, hosts.get(broker_id), len(parts), *counts])
        by_topic: dict[str, list] = {}
        for p in parts:
            by_topic.setdefault(p.topic, []).append(p)
        detail += [[broker_id, topic, [p.partition for p in ps], *loss_counts(ps, regs, min_isr)]
                   for topic, ps in sorted(by_topic.items())]
    names = ", ".join(map(str, sorted(lost)))
    return Result(tables=[Table(MISSING_COLUMNS, summary, name="missing"),
                          Table(PARTITION_COLUMNS, detail, name="partitions")],
                  messages=[f"Missing broker id(s): {names}. Bring the broker back with its id "
                            "(see broker-ids suggest), or reassign its partitions."])


def loss_counts(parts: list, regs: Registrations, min_isr: dict[str, int]) -> list[int]:
    """How many of `parts` are under-replicated, under min ISR, offline (no live leader)."""
    return [sum(len(p.isr) < len(p.replicas) for p in parts),
            sum(len(p.isr) < min_isr.get(p.topic, 1) for p in parts),
            sum(p.leader < 0 or p.leader not in regs.live for p in parts)]


MISSING_COLUMNS = ["BrokerId", "State", "LastHost", "Partitions", "UnderReplicated", "UnderMinIsr",
                   "Offline"]
PARTITION_COLUMNS = ["BrokerId", "Topic", "Partitions", "UnderReplicated", "UnderMinIsr", "Offline"]


def last_hosts(session: Session, snap: ClusterSnapshot, mapping_topic: str,
               regs: Registrations) -> dict[int, str]:
    """id -> the host it last had: a fenced registration's host, else the mapping's entry."""
    hosts: dict[int, str] = {}
    if mapping_topic in snap.topics:
        for host, broker_id in read_mapping(session, mapping_topic, snap).items():
            hosts.setdefault(broker_id, host)
    hosts.update(regs.fenced)
    return hosts


# -- the mapping topic -------------------------------------------------------------------------


def mapping_value(broker_id: int) -> bytes:
    return json.dumps({"version": MAPPING_VERSION, "broker.id": broker_id}).encode()


def parse_mapping_value(value: bytes) -> int | None:
    """The broker id of a mapping value, None when it is not one this version understands."""
    try:
        data = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("version") != MAPPING_VERSION:
        return None
    broker_id = data.get("broker.id")
    return broker_id if isinstance(broker_id, int) and not isinstance(broker_id, bool) and broker_id >= 0 else None


def read_mapping(session: Session, topic: str, snap: ClusterSnapshot) -> dict[str, int]:
    """host -> id, the latest value per key of every partition up to its end (a tombstone or
    an unreadable value removes the key)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
    info = snap.topics.get(topic)
    if info is None:
        return {}
    consumer = Consumer({**session_client_config(session), "group.id": "kafka-shell-broker-ids",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest"})
    mapping: dict[str, int] = {}
    try:
        timeout = session.conn.timeout_s
        ends = {}
        for p in info.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p.partition), timeout=timeout)
            if high > low:
                ends[p.partition] = high
        if not ends:
            return {}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        deadline = time.monotonic() + timeout
        done: set[int] = set()
        while len(done) < len(ends):
            if time.monotonic() > deadline:
                raise KafkaCallError(f'Reading the mapping topic "{topic}" took longer than '
                                     f"{timeout:g} s (raise --timeout if it is just slow).", retriable=True)
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error, partition, offset = msg.error(), msg.partition() or 0, msg.offset() or 0
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaCallError(f'Reading the mapping topic "{topic}": {error.str()}')
                done.add(partition)
                continue
            key = msg.key()
            if isinstance(key, bytes):
                value = msg.value()
                broker_id = parse_mapping_value(value) if isinstance(value, bytes) else None
                if broker_id is None:  # a tombstone, or a value this version cannot read
                    mapping.pop(key.decode(errors="replace"), None)
                else:
                    mapping[key.decode(errors="replace")] = broker_id
            if offset + 1 >= ends[partition]:
                done.add(partition)
    except KafkaException as exc:
        raise KafkaCallError(f'Reading the mapping topic "{topic}": {exc.args[0].str()}') from None
    finally:
        consumer.close()
    return mapping


def session_client_config(session: Session) -> dict:
    """The session's bootstrap and client settings, for a Producer or a Consumer."""
    from kafka_shell.client_config import librdkafka_properties
    conn = session.conn
    return {"bootstrap.servers": conn.bootstrap, **librdkafka_properties(conn.properties), "log_level": 3}

