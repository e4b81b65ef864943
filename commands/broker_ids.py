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

from typing import TYPE_CHECKING

from kafka_shell.declarations import failure_lines
from kafka_shell.admin import cluster, configs, records, topics
from kafka_shell.admin.cluster import Registrations
from kafka_shell.admin.topics import NewTopic
from kafka_shell.protocol.broker_identity import MAPPING_TOPIC, apply_record, choose_id, mapping_value
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError, shown
from kafka_shell.base.names import check_topic_name
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ClusterSnapshot, PartitionInfo
    from kafka_shell.connection.session import Session

ACTIONS = {
    "missing": "Ids that replica sets name but no live broker holds, and what they cost.",
    "hosts": "The host -> id mapping, each entry live, missing or garbage.",
    "record": "Write the live brokers' hosts to the mapping (only what changed).",
    "suggest": "The id a broker starting on --host without an id should take (KIP-426).",
    "gc": "Remove garbage mapping entries (host g -> N while N is live on host h != g).",
}


@command("broker-ids",
         Option("action", choices=tuple(ACTIONS), default="missing", help="What to do (default: missing)."),
         Option("--host", metavar="HOST", help="suggest: the host name of the starting broker."),
         Option("--mapping-topic", default=MAPPING_TOPIC, metavar="TOPIC",
                help=f"The compacted topic holding the host -> id mapping (default {MAPPING_TOPIC})."),
         Option("--dry-run", flag=True, help="record, gc: show what would change; change nothing."),
         Option("--yes", flag=True, help="gc: do not ask for confirmation."),
         confirm=Confirm(applies=lambda args: args["action"] == "gc", proposed=True),
         help="Broker ids lost with a disk or a machine, and the host -> id mapping of KIP-426.",
         description="\n".join(f"  {a}: {h}" for a, h in ACTIONS.items()) +
         "\n  The mapping is a compacted topic any tool can read: key the host name, value "
         '{"version": 0, "broker.id": N}.',
         examples=("broker-ids missing", "broker-ids missing -o json", "broker-ids record --dry-run",
                   "broker-ids hosts", "broker-ids suggest --host broker-3.example.com",
                   "broker-ids gc --yes"), tables=("missing", "partitions", "hosts", "recorded", "suggestion", "garbage"))
def broker_ids(session: Session, args: dict) -> Result | Proposal:
    action = args["action"]
    if action != "suggest" and args["host"] is not None:
        raise UsageError(f"--host is for broker-ids suggest, not {action}")
    if action == "suggest" and not args["host"]:
        raise UsageError("broker-ids suggest needs --host HOST (the host name of the starting broker)")
    if action not in ("record", "gc") and (args["dry_run"] or args["yes"]):
        raise UsageError(f"--dry-run and --yes are for broker-ids record and gc, not {action}")
    topic = args["mapping_topic"]
    check_topic_name(topic)
    if action == "missing":
        return missing(session, topic)
    if action == "hosts":
        return hosts_action(session, topic)
    if action == "record":
        return record(session, topic, args["dry_run"])
    if action == "suggest":
        return suggest(session, topic, args["host"])
    return gc(session, topic, args["dry_run"])


# -- missing -----------------------------------------------------------------------------------


def missing(session: Session, mapping_topic: str) -> Result:
    snap = session.conn.read()
    regs = cluster.registrations(session.conn, snap)
    lost: dict[int, list[PartitionInfo]] = {}   # id -> partitions naming it
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
    settings = configs.topic_configs(session.conn, sorted({p.topic for ps in lost.values() for p in ps}),
                                     [configs.MIN_ISR])
    min_isr = {name: c.min_isr for name, c in settings.items()}
    summary, detail = [], []
    for broker_id in sorted(lost):
        parts = lost[broker_id]
        counts = loss_counts(parts, regs, min_isr)
        state = "fenced" if broker_id in regs.fenced else "not registered"
        summary.append([broker_id, state, hosts.get(broker_id), len(parts), *counts])
        by_topic: dict[str, list[PartitionInfo]] = {}
        for p in parts:
            by_topic.setdefault(p.topic, []).append(p)
        detail += [[broker_id, topic, [p.partition for p in ps], *loss_counts(ps, regs, min_isr)]
                   for topic, ps in sorted(by_topic.items())]
    names = ", ".join(map(str, sorted(lost)))
    return Result(tables=[Table(MISSING_COLUMNS, summary, name="missing"),
                          Table(PARTITION_COLUMNS, detail, name="partitions")],
                  messages=[f"Missing broker id(s): {names}. Bring the broker back with its id "
                            "(see broker-ids suggest), or reassign its partitions."])


def loss_counts(parts: list[PartitionInfo], regs: Registrations, min_isr: dict[str, int]) -> list[int]:
    """How many of `parts` are under-replicated, under min ISR, offline (no live leader)."""
    return [sum(len(p.isr) < len(p.replicas) for p in parts),
            sum(len(p.isr) < min_isr.get(p.topic, 1) for p in parts),
            sum(p.leader < 0 or p.leader not in regs.live for p in parts)]


MISSING_COLUMNS = ["BrokerId", "State", "LastHost", "Partitions", "UnderReplicated", "UnderMinIsr",
                   "Offline"]
PARTITION_COLUMNS = ["BrokerId", "Topic", "Partitions", "UnderReplicated", "UnderMinIsr", "Offline"]


def last_hosts(session: Session, snap: ClusterSnapshot, mapping_topic: str,
               regs: Registrations) -> dict[int, str]:
    """id -> the host it last had: the mapping's entry, else a fenced registration's host."""
    hosts: dict[int, str] = dict(regs.fenced)
    for host, broker_id in sorted(read_mapping(session, mapping_topic, snap).items()):
        hosts[broker_id] = host
    return hosts


# -- the mapping topic -------------------------------------------------------------------------


def read_mapping(session: Session, topic: str, snap: ClusterSnapshot) -> dict[str, int]:
    """host -> id, the latest value per key of every partition up to its end (a tombstone or
    an unreadable value removes the key)."""
    mapping: dict[str, int] = {}
    records.read_to_end(session.conn, snap, topic, lambda key, value: apply_record(mapping, key, value),
                        what=f'the mapping topic "{topic}"')
    return mapping


def mapping_state(broker_id: int, host: str, live_hosts: dict[int, str]) -> str:
    """KIP-426: an entry is garbage when its id is live on another host; missing when no live
    broker holds its id."""
    if broker_id not in live_hosts:
        return "missing"
    return "live" if live_hosts[broker_id] == host else "garbage"


def live_host_names(session: Session, regs: Registrations) -> dict[int, str]:
    """id -> the machine name of each live broker: its `host.name` config where the broker
    tells it (the sandbox's --hosts), else the host of its registration."""
    return {**regs.live, **configs.host_names(session.conn, sorted(regs.live))}


def current(session: Session, topic: str) -> tuple[ClusterSnapshot, Registrations, dict[int, str], dict[str, int]]:
    """One fresh read: the snapshot, the registrations, the live brokers' host names, the mapping."""
    snap = session.conn.read()
    regs = cluster.registrations(session.conn, snap)
    return snap, regs, live_host_names(session, regs), read_mapping(session, topic, snap)


def hosts_action(session: Session, topic: str) -> Result:
    snap, regs, live_hosts, mapping = current(session, topic)
    rows = [[host, broker_id, mapping_state(broker_id, host, live_hosts)] for host, broker_id in sorted(mapping.items())]
    messages = [] if topic in snap.topics else [f'The mapping topic "{topic}" does not exist yet: '
                                                "broker-ids record creates it."]
    return Result(tables=[Table(["Host", "BrokerId", "State"], rows, name="hosts")], messages=messages)


def record(session: Session, topic: str, dry_run: bool) -> Result:
    """Write host -> id for every live broker whose entry is absent or different."""
    snap, regs, live_hosts, mapping = current(session, topic)
    changes = {host: broker_id for broker_id, host in sorted(live_hosts.items()) if mapping.get(host) != broker_id}
    rows = [[host, mapping.get(host), broker_id] for host, broker_id in sorted(changes.items())]
    table = Table(["Host", "OldBrokerId", "BrokerId"], rows, name="recorded")
    if not changes:
        return Result(tables=[table], messages=[f'The mapping in "{topic}" is up to date ({len(mapping)} host(s)).'])
    if dry_run:
        return Result(tables=[table], messages=[f'Would record {len(changes)} host(s) in "{topic}" (dry run).'])
    if topic not in snap.topics:
        create_mapping_topic(session, topic, len(regs.live))
    produce(session, topic, {host: mapping_value(b) for host, b in changes.items()})
    return Result(tables=[table], messages=[f'Recorded {len(changes)} host(s) in "{topic}".'])


def create_mapping_topic(session: Session, topic: str, brokers: int) -> None:
    """Compacted, one partition (the mapping is small and read whole), RF 3 or the broker count."""
    rf = max(1, min(3, brokers))
    new = NewTopic(topic, 1, rf, configs=(("cleanup.policy", "compact"),))
    (outcome,) = topics.create(session.conn, [new], validate_only=False)
    if outcome.error is not None and not outcome.exists:
        raise KafkaCallError(failure_lines.created_line(outcome.error, topic, brokers, rf))


def produce(session: Session, topic: str, values: dict[str, bytes | None]) -> None:
    """Write key -> value records (None: a tombstone), acknowledged by all in-sync replicas."""
    produced = records.produce(session.conn, topic, [(host.encode(), value) for host, value in values.items()],
                               acks="all", partition=0, idempotent=False)
    if produced.failures:
        raise KafkaCallError(f'Writing to the mapping topic "{topic}" failed: {produced.failures[0]}.', retriable=True)


def suggest(session: Session, topic: str, host: str) -> Result:
    """KIP-426's procedure for a broker starting on `host` without an id (no broker.id in its
    config, no meta.properties): the mapping's id for the host unless a live broker holds it;
    else the one missing id; several missing ids need a human; none: a new id."""
    snap, regs, live_hosts, mapping = current(session, topic)
    missing_ids = {r for t in snap.topics.values() for p in t.partitions for r in p.replicas
                   if r not in regs.live} | set(regs.fenced)
    choice = choose_id(host, mapping, set(regs.live), missing_ids, set(regs.fenced))
    held = (f" (the mapping's id {choice.garbage_of} is live on {live_hosts.get(choice.garbage_of)}: "
            "that entry is garbage)" if choice.garbage_of is not None else "")
    if choice.broker_id is None:
        raise ShellError(f"Several ids are missing ({', '.join(map(str, choice.candidates))}){held}: which one "
                         f"the broker on {host} takes is a human decision (KIP-426); set broker.id in its config.")
    why = {"mapping": f'the mapping in "{topic}" names it and no live broker holds it',
           "only missing id": "the one id replica sets name that no live broker holds",
           "new id": "no id is missing, so a new one (the highest known id + 1)"}[choice.reason]
    return Result.table(["Host", "BrokerId", "Reason"], [[host, choice.broker_id, choice.reason]],
                        f"Broker on {host} should take id {choice.broker_id}: {why}{held}.", name="suggestion")


def gc(session: Session, topic: str, dry_run: bool) -> Result | Proposal:
    """Tombstones for the garbage entries (host g -> N while N is live on host h != g)."""
    _, _, live_hosts, mapping = current(session, topic)
    garbage = {host: b for host, b in sorted(mapping.items()) if mapping_state(b, host, live_hosts) == "garbage"}
    rows = [[host, b, live_hosts[b]] for host, b in garbage.items()]
    table = Table(["Host", "BrokerId", "LiveOn"], rows, name="garbage")
    if not garbage:
        return Result(tables=[table], messages=[f'No garbage in the mapping of "{topic}".'])
    if dry_run:
        return Result(tables=[table], messages=[f"Would remove {entries(len(garbage))} (dry run)."])
    def remove() -> Result:
        produce(session, topic, dict.fromkeys(garbage))
        return Result(tables=[table], messages=[f'Removed {entries(len(garbage))} from "{topic}".'])
    return Proposal(f"Remove {entries(len(garbage))}: {', '.join(garbage)}?",
                    f"broker-ids gc removes {entries(len(garbage))} ({', '.join(map(shown, garbage))})", remove)


def entries(n: int) -> str:
    return f"{n} garbage mapping entr{'y' if n == 1 else 'ies'}"
