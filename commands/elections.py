"""Leader elections: preferred-replica-leader-election (KIP-4 / KIP-183) and elect-leaders
(kafka-leader-election: preferred, unclean, and KAFKA-20098's designated elections).

Every election goes to the controller as ElectLeaders over the direct channel, at most 1000
partitions a request (the most a v3 request is served for). Results are grouped as Kafka's tool
groups them (succeeded, already elected, failed, and exit 1 on any failure) and also returned as
a table, so `--output json` carries one row per partition. `--blocking` then waits until every
broker's own metadata shows the new leaders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.admin import elections, topics
from kafka_shell.declarations import failure_lines
from kafka_shell.admin.elections import DESIGNATED, ELECTED, NOT_NEEDED, PREFERRED, UNCLEAN, Election, Entry
from kafka_shell.base.answers import AdminError
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError
from kafka_shell.base.files import is_id, read_json
from kafka_shell.declarations.option_types import positive_int
from kafka_shell.declarations.progress import ProgressBar
from kafka_shell.declarations.registry import INT32_MAX, Confirm, Option, command, int_range
from kafka_shell.declarations.render import Result

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ClusterSnapshot, PartitionInfo
    from kafka_shell.connection.session import Session

Key = tuple[str, int]
TYPES = {"preferred": PREFERRED, "unclean": UNCLEAN, "designated": DESIGNATED}
LABELS: dict[int, str] = {v: k.upper() for k, v in TYPES.items()}
FILE_EXAMPLE = '{"partitions":[{"topic":"foo","partition":1}]}'

non_negative_int = int_range(0, INT32_MAX, "a partition number")


SCOPE = ("--topic", "--all-topic-partitions", "--path-to-json-file")
COMMON = (
    Option("--topic", metavar="NAME", completer="topic", help="Elect for this topic's partitions."),
    Option("--partition", type=non_negative_int, metavar="P", help="Only this partition of --topic."),
    Option("--all-topic-partitions", flag=True, help="Elect for every partition of the cluster."),
    Option("--path-to-json-file", metavar="FILE", completer="path",
           help=f"Partitions from a file: {FILE_EXAMPLE} (\"designatedLeader\" per entry for "
                "designated elections)."),
    Option("--blocking", flag=True,
           help="Wait until the metadata of every broker shows the new leaders."),
    Option("--timeout-ms", type=positive_int, default=30000, metavar="MS",
           help="How long the controller, and --blocking, may wait."),
    Option("--zookeeper", metavar="HOST:PORT",
           help="Removed (KIP-183): only says to use kafka-shell --bootstrap-server instead."),
)
PREFERRED_HELP = (
    "The preferred replica of a partition is the first replica of its assignment (see the "
    "Replicas column of describe-topic); Kafka spreads leadership evenly by making it the leader. "
    "After a broker restarts, its partitions stay led by other brokers until an election moves "
    "them back. Brokers with auto.leader.rebalance.enable=true (Kafka's default) do this by "
    "themselves, which makes a preferred election unnecessary.")
SCOPE_HELP = (
    "Give exactly one of --topic (with --partition for one partition), --all-topic-partitions, "
    "or --path-to-json-file. --zookeeper was removed (KIP-183): the election goes through the "
    "brokers of --bootstrap-server.")
# One paragraph per election type, each true for its own type only.
ELECTION_TYPES_HELP = (
    "preferred: " + PREFERRED_HELP + "\n"
    "unclean: only for partitions without a leader. The controller makes a live replica the leader "
    "even if it is out of the ISR, so messages it had not copied are lost. It is the last resort "
    "when every in-sync replica is gone; the controller does it by itself only where "
    "unclean.leader.election.enable=true (a topic or broker config).\n"
    "designated: only for offline partitions (KAFKA-20098). The leader is the replica that "
    "--path-to-json-file names for each partition (\"designatedLeader\", a broker id, as "
    "kafka-unclean-recovery writes it); like unclean, it may lose data.")


@command("preferred-replica-leader-election", *COMMON,
         mutates=True, topic_context=True, exclusive_groups=(SCOPE,),
         help="Move leadership back to the preferred replicas (the first replica of each partition).",
         description=PREFERRED_HELP + "\n" + SCOPE_HELP,
         examples=("preferred-replica-leader-election --topic orders",
                   "preferred-replica-leader-election --all-topic-partitions --blocking",
                   "preferred-replica-leader-election --path-to-json-file partitions.json --dry-run"), tables=("elections",))
def preferred_replica_leader_election(session: Session, args: dict) -> Result:
    return elect(session, args, PREFERRED, "preferred-replica-leader-election")


def confirm_election(session: Session, args: dict) -> str | None:
    """Unclean and designated elections may lose acknowledged records: name what they touch."""
    kind = TYPES[args["election_type"]]
    if kind == PREFERRED:
        return None
    check_zookeeper(session, args)
    _, entries = scope(session, args, kind, "elect-leaders")
    listed = ", ".join(f"{e[0]}-{e[1]}" for e in entries[:10]) + (f" and {len(entries) - 10} more"
                                                                  if len(entries) > 10 else "")
    plural = "s" if len(entries) != 1 else ""
    return (f"Run a{'n' if kind == UNCLEAN else ''} {LABELS[kind].lower()} election for {len(entries)} "
            f"partition{plural} ({listed}), which may lose acknowledged records?")


@command("elect-leaders",
         Option("--election-type", choices=tuple(TYPES), required=True,
                help="preferred: the first replica; unclean: any live replica of a partition "
                     "without a leader (may lose data); designated: the replica the file names "
                     "(KAFKA-20098, offline partitions only)."),
         *COMMON,
         mutates=True, topic_context=True, exclusive_groups=(SCOPE,),
         confirm=Confirm(question=confirm_election),
         help="Elect partition leaders: preferred, unclean or designated (kafka-leader-election).",
         description=ELECTION_TYPES_HELP + "\n" + SCOPE_HELP,
         examples=("elect-leaders --election-type preferred --all-topic-partitions",
                   "elect-leaders --election-type unclean --topic orders --partition 3",
                   "elect-leaders --election-type designated --path-to-json-file recovery.json"), tables=("elections",))
def elect_leaders(session: Session, args: dict) -> Result:
    return elect(session, args, TYPES[args["election_type"]], "elect-leaders")


# -- the election ----------------------------------------------------------------------------


def elect(session: Session, args: dict, kind: int, name: str) -> Result:
    check_zookeeper(session, args)
    snap, entries = scope(session, args, kind, name)
    elections.require(session.conn, kind)
    if args["dry_run"]:
        return predict(snap, entries, kind)
    # The controller may take --timeout-ms over the elections, and --blocking as long again.
    with session.bounded(session.conn.timeout_s + args["timeout_ms"] / 1000):
        if args["all_topic_partitions"] and not entries:
            try:
                outcomes = elections.elect_all(session.conn, kind, args["timeout_ms"])
            except KafkaCallError as exc:
                raise failure_lines.election_refusal(exc) from None
        else:
            outcomes = elections.elect(session.conn, entries, kind, args["timeout_ms"])
    result = report(outcomes, kind, snap)
    elected = [e for e in entries if outcomes[e[:2]].state == ELECTED]
    if args["blocking"] and elected:
        with session.bounded(args["timeout_ms"] / 1000):
            waited = wait_for_leaders(session, snap, elected, kind, args["timeout_ms"])
        result.messages.append(waited.messages[0])
        result.exit_code = max(result.exit_code, waited.exit_code)
    return result


def check_zookeeper(session: Session, args: dict) -> None:
    """KIP-183: --zookeeper is gone; say what replaces it, and do nothing."""
    if args["zookeeper"] is None:
        return
    if session.target is None:
        raise UsageError("--zookeeper was removed (KIP-183): use --bootstrap-server HOST:PORT instead")
    raise UsageError("--zookeeper was removed (KIP-183) and cannot be used with --bootstrap-server: "
                     "drop --zookeeper (nothing was done)")


def scope(session: Session, args: dict, kind: int, name: str) -> tuple[ClusterSnapshot, list[Entry]]:
    """The partitions to elect for, from exactly one of the scope options, and the command's
    one read of the cluster they were checked against (and a dry run predicts from)."""
    if args["partition"] is not None and not args["topic"]:
        raise UsageError("--partition needs --topic (the topic the partition belongs to)")
    if not any(args[o.lstrip("-").replace("-", "_")] for o in SCOPE):
        raise UsageError(f"{name} needs one of {', '.join(SCOPE)} (see {name} --help)")
    if kind == DESIGNATED and not args["path_to_json_file"]:
        raise UsageError("Designated elections need --path-to-json-file with a \"designatedLeader\" "
                         'per partition, like {"partitions":[{"topic":"foo","partition":1,"designatedLeader":2}]}')
    if args["path_to_json_file"]:
        entries = read_partitions_file(args["path_to_json_file"], kind)
        snap = topics.read_for(session.conn, sorted({e[0] for e in entries}))
        check_partitions_exist(snap, entries)
        return snap, entries
    if args["topic"]:
        snap = topics.read_for(session.conn, [args["topic"]])
        topic = topics.require(session.conn, args["topic"], snap)
        if args["partition"] is None:
            return snap, [(topic.name, p.partition, None) for p in topic.partitions]
        entries = [(topic.name, args["partition"], None)]
        check_partitions_exist(snap, entries)
        return snap, entries
    snap = session.conn.read()
    return snap, [(t.name, p.partition, None) for _, t in sorted(snap.topics.items()) for p in t.partitions]


def read_partitions_file(path: str, kind: int) -> list[Entry]:
    """Kafka's election file; every problem is its own UsageError, and nothing is sent."""
    data = read_json(path, "--path-to-json-file", f"expected {FILE_EXAMPLE}")
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        raise UsageError(f'{path} needs a "partitions" list, like {FILE_EXAMPLE}')
    if not data["partitions"]:
        raise UsageError(f"{path} lists no partitions: add at least one, like {FILE_EXAMPLE}")
    entries: list[Entry] = []
    seen: set[tuple[str, int]] = set()
    for n, item in enumerate(data["partitions"], 1):
        if not (isinstance(item, dict) and isinstance(item.get("topic"), str) and item["topic"]
                and is_id(item.get("partition"))):
            raise UsageError(f'{path}: entry {n} needs "topic" (a name) and "partition" (a number 0 or more), '
                             f'like {{"topic":"foo","partition":1}}')
        key = (item["topic"], item["partition"])
        if key in seen:
            raise UsageError(f"{path} lists partition {key[0]}-{key[1]} more than once: remove the duplicate")
        seen.add(key)
        leader = item.get("designatedLeader")
        if kind == DESIGNATED and not is_id(leader):
            raise UsageError(f'{path}: entry {n} ({key[0]}-{key[1]}) needs "designatedLeader" (a broker id) '
                             "for a designated election")
        if kind != DESIGNATED and "designatedLeader" in item:
            raise UsageError(f'{path}: entry {n} has "designatedLeader", which only designated elections use: '
                             "add --election-type designated, or remove it")
        entries.append((key[0], key[1], leader))
    return entries


def check_partitions_exist(snap: ClusterSnapshot, entries: list[Entry]) -> None:
    """Unknown topics or partitions (in the command's read `snap`) fail before anything is sent."""
    topics = snap.topics
    gone = [e for e in entries if e[0] not in topics or e[1] >= len(topics[e[0]].partitions)]
    if gone:
        topic, partition, _ = gone[0]
        known = topics.get(topic)
        where = (f"{topic} has {len(known.partitions)} partition(s)" if known
                 else f'topic "{topic}" does not exist')
        more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
        raise ShellError(f"Partition {topic}-{partition} does not exist{more}: {where} "
                         "(check with describe-topic); nothing was elected.")


def report(outcomes: dict[Key, Election], kind: int, snap: ClusterSnapshot) -> Result:
    """Kafka's three groups as status lines, and one table row per partition; a failed
    preferred election names the preferred replica (the broker it needs), from `snap`."""
    label = LABELS[kind]
    done, noop, failed, rows = [], [], [], []
    for (topic, partition), e in sorted(outcomes.items()):
        name = f"{topic}-{partition}"
        if e.state == ELECTED:
            done.append(name)
        elif e.state == NOT_NEEDED:
            noop.append(name)
        else:
            info = snap.topics.get(topic)
            preferred = info.partitions[partition].preferred_leader if info and partition < len(info.partitions) else -1
            needs = f" (preferred replica: broker {preferred})" if kind == PREFERRED and preferred >= 0 else ""
            failed.append(f"Error completing leader election ({label}) for partition: {name}{needs}: "
                          f"{failure_lines.election_line(e)}")
        rows.append([topic, partition, e.state, failure_lines.election_line(e)])
    messages = []
    if done:
        messages.append(f"Successfully completed leader election ({label}) for partitions {', '.join(done)}")
    if noop:
        messages.append(f"Valid replica already elected for partitions {', '.join(noop)}")
    messages += failed
    if failed:
        messages.append(f"{len(failed)} partition(s) could not be elected")
    # Each failure's error is said once, on its status line: the table format leaves it out.
    return Result.table(["Topic", "Partition", "Result", "Error"], rows, *messages, name="elections",
                        kinds={"Error": "reported"},
                        exit_code=1 if failed else 0)


# -- --dry-run: what would change, from the command's read of the cluster ------------------------


def predict(snap: ClusterSnapshot, entries: list[Entry], kind: int) -> Result:
    """What the controller would do (admin/elections.predict, by Kafka's election rule)."""
    label = LABELS[kind]
    would, noop, fail, rows = [], [], [], []
    designated = {e[:2]: e[2] for e in entries}
    for key, e in sorted(elections.predict(snap, entries, kind).items()):
        name = f"{key[0]}-{key[1]}"
        why = _refused(snap.topics[key[0]].partitions[key[1]], e.refused, designated[key]) if e.refused else None
        rows.append([key[0], key[1], {ELECTED: "would elect", NOT_NEEDED: "already elected"}.get(e.state, "would fail"),
                     why])
        if e.state == ELECTED:
            would.append(name)
        elif e.state == NOT_NEEDED:
            noop.append(name)
        else:
            fail.append(f"Would fail ({label}) for partition: {name}: {why}")
    messages = []
    if would:
        messages.append(f"Would elect leaders ({label}) for partitions {', '.join(would)} (dry run)")
    if noop:
        messages.append(f"Valid replica already elected for partitions {', '.join(noop)}")
    messages += fail
    if not would:
        messages.append("Nothing to elect (dry run).")
    return Result.table(["Topic", "Partition", "Result", "Error"], rows, *messages, name="elections")


def _refused(p: PartitionInfo, why: str, designated: int | None) -> str:
    if why == elections.PREFERRED_NOT_LIVE:
        return f"preferred replica {p.preferred_leader} is not live and in the ISR"
    if why == elections.NOT_A_REPLICA:
        return f"broker {designated} is not a replica (replicas: {','.join(map(str, p.replicas))})"
    return f"broker {designated} is not live" if designated is not None else "no replica is live"


# -- --blocking: wait until every broker shows the new leaders -----------------------------------


def wait_for_leaders(session: Session, snap: ClusterSnapshot, elected: list[Entry], kind: int, timeout_ms: int) -> Result:
    """--blocking: until every broker (of the command's read `snap`) shows the elected leaders."""
    bar = ProgressBar(session.stderr)

    def report(event: elections.Shown | AdminError) -> None:
        if isinstance(event, elections.Shown):
            bar.show(event.shown / event.total, f"{event.shown}/{event.total} partition(s) shown by every broker")
        else:
            session.notify(f"{event}; waiting on the other brokers.")
    waited = elections.wait_for_leaders(session.conn, list(snap.brokers), elected, kind, timeout_ms, report)
    bar.close()
    if not waited.brokers:
        return Result.message("No broker answered while waiting for the new leaders.", exit_code=1)
    if waited.pending:
        first = waited.pending[0]
        return Result.message(
            f"Timed out after {timeout_ms} ms waiting for the new leaders: {len(waited.pending)} of {waited.total} "
            f"partition(s) not yet shown by every broker (first: {first[0]}-{first[1]}); "
            "check with describe-topic or raise --timeout-ms.", exit_code=1)
    return Result.message(f"All {len(waited.brokers)} broker(s) show the new leaders of {waited.total} partition(s) "
                          f"(waited {waited.elapsed:.1f} s).")
