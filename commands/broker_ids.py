"""`broker-ids ACTION`: broker identity after a lost disk or a replaced machine (KIP-426).

A broker that comes back without its meta.properties gets a new id, and every partition that
named the old id stays one replica short. `missing` finds those ids from one fresh read of the
cluster (Metadata for the replica sets, DescribeCluster with fenced brokers for registrations).
The KIP's host -> id mapping lives in the cluster itself, in a compacted topic (`__broker_hosts`
by default): key the host name, value `{"version": 0, "broker.id": N}`. `record` writes it from
the registrations, `hosts` lists it, `suggest` applies the KIP's procedure for a broker starting
without an id, and `gc` removes the entries the KIP calls garbage. The reading, judging and
writing are kafka_shell/admin/broker_ids.py's; this module parses and shapes the tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.admin import broker_ids
from kafka_shell.declarations import failure_lines
from kafka_shell.protocol.broker_identity import MAPPING_TOPIC
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError, shown
from kafka_shell.base.names import check_topic_name
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import PartitionInfo
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
def broker_ids_cmd(session: Session, args: dict) -> Result | Proposal:
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
    lost = broker_ids.missing(session.conn, mapping_topic)
    if not lost.ids:
        return Result(tables=[Table(MISSING_COLUMNS, [], name="missing"),
                              Table(PARTITION_COLUMNS, [], name="partitions")],
                      messages=["No missing broker ids: every id in a replica set is a live broker."])
    summary, detail = [], []
    for one in lost.ids:
        counts = broker_ids.loss_counts(one.partitions, lost.regs, lost.min_isr)
        summary.append([one.broker_id, "fenced" if one.fenced else "not registered", one.host, len(one.partitions),
                        *counts])
        by_topic: dict[str, list[PartitionInfo]] = {}
        for p in one.partitions:
            by_topic.setdefault(p.topic, []).append(p)
        detail += [[one.broker_id, topic, [p.partition for p in ps], *broker_ids.loss_counts(ps, lost.regs, lost.min_isr)]
                   for topic, ps in sorted(by_topic.items())]
    names = ", ".join(str(one.broker_id) for one in lost.ids)
    return Result(tables=[Table(MISSING_COLUMNS, summary, name="missing"),
                          Table(PARTITION_COLUMNS, detail, name="partitions")],
                  messages=[f"Missing broker id(s): {names}. Bring the broker back with its id "
                            "(see broker-ids suggest), or reassign its partitions."])


MISSING_COLUMNS = ["BrokerId", "State", "LastHost", "Partitions", "UnderReplicated", "UnderMinIsr",
                   "Offline"]
PARTITION_COLUMNS = ["BrokerId", "Topic", "Partitions", "UnderReplicated", "UnderMinIsr", "Offline"]


# -- the mapping topic -------------------------------------------------------------------------


def hosts_action(session: Session, topic: str) -> Result:
    now = broker_ids.current(session.conn, topic)
    rows = [[host, b, broker_ids.mapping_state(b, host, now.live_hosts)] for host, b in sorted(now.mapping.items())]
    messages = [] if topic in now.snap.topics else [f'The mapping topic "{topic}" does not exist yet: '
                                                    "broker-ids record creates it."]
    return Result(tables=[Table(["Host", "BrokerId", "State"], rows, name="hosts")], messages=messages)


def record(session: Session, topic: str, dry_run: bool) -> Result:
    """Write host -> id for every live broker whose entry is absent or different."""
    now = broker_ids.current(session.conn, topic)
    changes = now.changes()
    rows = [[host, now.mapping.get(host), b] for host, b in sorted(changes.items())]
    table = Table(["Host", "OldBrokerId", "BrokerId"], rows, name="recorded")
    if not changes:
        return Result(tables=[table], messages=[f'The mapping in "{topic}" is up to date ({len(now.mapping)} host(s)).'])
    if dry_run:
        return Result(tables=[table], messages=[f'Would record {len(changes)} host(s) in "{topic}" (dry run).'])
    if topic not in now.snap.topics:
        brokers = len(now.regs.live)
        error = broker_ids.create_mapping_topic(session.conn, topic, brokers)
        if error is not None:
            raise KafkaCallError(failure_lines.created_line(error, topic, brokers,
                                                            broker_ids.mapping_replication(brokers)))
    write(session, topic, dict(changes))
    return Result(tables=[table], messages=[f'Recorded {len(changes)} host(s) in "{topic}".'])


def write(session: Session, topic: str, entries: dict[str, int | None]) -> None:
    failures = failure_lines.unacked_lines(broker_ids.write(session.conn, topic, entries).unacked)
    if failures:
        raise KafkaCallError(f'Writing to the mapping topic "{topic}" failed: {failures[0]}.', retriable=True)


def suggest(session: Session, topic: str, host: str) -> Result:
    """KIP-426's choice (kafka_shell/admin/broker_ids.py) for a broker starting on `host` without an id."""
    now = broker_ids.current(session.conn, topic)
    choice = now.suggest(host)
    held = (f" (the mapping's id {choice.garbage_of} is live on {now.live_hosts.get(choice.garbage_of)}: "
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
    now = broker_ids.current(session.conn, topic)
    garbage = now.garbage()
    rows = [[host, b, now.live_hosts[b]] for host, b in garbage.items()]
    table = Table(["Host", "BrokerId", "LiveOn"], rows, name="garbage")
    if not garbage:
        return Result(tables=[table], messages=[f'No garbage in the mapping of "{topic}".'])
    if dry_run:
        return Result(tables=[table], messages=[f"Would remove {entries(len(garbage))} (dry run)."])
    def remove() -> Result:
        write(session, topic, dict.fromkeys(garbage))
        return Result(tables=[table], messages=[f'Removed {entries(len(garbage))} from "{topic}".'])
    return Proposal(f"Remove {entries(len(garbage))}: {', '.join(garbage)}?",
                    f"broker-ids gc removes {entries(len(garbage))} ({', '.join(map(shown, garbage))})", remove)


def entries(n: int) -> str:
    return f"{n} garbage mapping entr{'y' if n == 1 else 'ies'}"
