"""unclean-recovery (kafka-unclean-recovery, KAFKA-20098): bring offline partitions back by
electing the replica with the longest log, not a random one.

Every broker holding a replica of the targeted partitions is asked, directly, what its replica
holds; a replica is a candidate when its broker is live and answered without error within
--recovery-duration-ms. The chosen one is an eligible leader replica first, then the highest
leader epoch, then the longest log end offset; ties go to the earlier replica in the assignment
(kafka_shell/admin/recovery.py: the asking and the rule, which the pipeline's plan shares, and
the elections).

Two ways to elect, picked from what the cluster advertises:
- KAFKA-20098's designated elections (ElectLeaders v3, <= 1000 partitions a request).
- Stock Apache Kafka: a reorder-only reassignment puts the chosen replica first, an unclean
  election elects the first live replica of the assignment, and a second reorder restores the
  old order. There the leader epoch a broker answers is its partition's current epoch, not that
  of the last record, so the rule is "longest log".
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_shell.declarations import failure_lines
from kafka_shell.admin import recovery, topics
from kafka_shell.admin.elections import ELECTED, NOT_NEEDED
from kafka_shell.admin.recovery import STOCK_PATH, Target
from kafka_shell.base.errors import ShellError, UsageError
from kafka_shell.base.files import is_id, read_json, write_new
from kafka_shell.declarations.option_types import positive_int
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ClusterSnapshot
    from kafka_shell.connection.session import Session

Key = tuple[str, int]

FILE_EXAMPLE = '{"partitions":[{"topic":"foo","partitions":[0,3,5]}]}'
ELECTION_TIMEOUT_MS = 30000

SCOPE = ("--path-to-json-file", "--all-offline-partitions")
RECOVERY_REFUSAL = ("unclean-recovery --automated-recovery may truncate logs: add --yes to confirm "
                    "(or --dry-run to see the plan)")
ACTIONS = ("--show-replica-info", "--manual-recovery-output-file", "--automated-recovery")


@command("unclean-recovery",
         Option("--path-to-json-file", metavar="FILE", completer="path",
                help=f"The partitions to recover: {FILE_EXAMPLE}."),
         Option("--all-offline-partitions", flag=True,
                help="Every partition without a leader (in the REPL, of the context topic only)."),
         Option("--topic", metavar="NAME", completer="topic",
                help="Limit --all-offline-partitions to this topic."),
         Option("--show-replica-info", flag=True,
                help="Print each replica's leader epoch, log end offset and gap to the longest log."),
         Option("--manual-recovery-output-file", metavar="FILE", completer="path",
                help="Write a new file of designated leaders for elect-leaders --election-type designated."),
         Option("--automated-recovery", flag=True,
                help="Elect the chosen replicas (asks first in the REPL; --yes elsewhere)."),
         Option("--recovery-duration-ms", type=positive_int, default=30000, metavar="MS",
                help="Replicas must answer within this time to be candidates (requests are retried until then)."),
         Option("--recovery-election-attempts", type=positive_int, default=3, metavar="N",
                help="Attempts per partition on transient election failures."),
         Option("--yes", flag=True, help="Do not ask before the elections."),
         aliases=("kafka-unclean-recovery",),
         mutates=True, topic_context=True,
         confirm=Confirm(applies=lambda args: args["automated_recovery"], proposed=True, refusal=RECOVERY_REFUSAL),
         exclusive_groups=(SCOPE, ("--manual-recovery-output-file", "--automated-recovery")),
         help="Recover offline partitions by electing the replica with the longest log (KAFKA-20098).",
         description=(
             "Asks every broker holding a replica of the targeted partitions for its leader epoch and "
             "log end offset, and picks, among live replicas that answered, the highest epoch, then the "
             "longest log (ties: the earlier replica in the assignment). Give one of --path-to-json-file "
             "or --all-offline-partitions, and at least one of --show-replica-info, "
             "--manual-recovery-output-file, --automated-recovery. On a cluster without KAFKA-20098's "
             "GetReplicaLogInfo and designated elections (every Apache Kafka release), the log ends come "
             "from ListOffsets and the chosen replica is elected by a reorder-only reassignment and an "
             "unclean election. An unclean election truncates the other replicas to the new leader's log."),
         examples=("unclean-recovery --all-offline-partitions --show-replica-info --dry-run",
                   "unclean-recovery --all-offline-partitions --manual-recovery-output-file recovery.json",
                   "unclean-recovery --path-to-json-file parts.json --automated-recovery --yes"), tables=("replicas", "elections"))
def unclean_recovery(session: Session, args: dict) -> Result | Proposal:
    check_arguments(session, args)
    path = recovery.path(session.conn)
    snap, targets = read_targets(session, args)
    offline = [t for t in targets if t.leader < 0]
    if offline:
        recovery.gather(session.conn, snap, offline, path, args["recovery_duration_ms"])
    for t in offline:
        recovery.choose(t, path)
    tables: list[Table] = []
    messages: list[str] = []
    if args["show_replica_info"]:
        tables.append(replica_table(targets))
        if path == STOCK_PATH:
            messages.append("Leader epochs come from ListOffsets (this cluster lacks GetReplicaLogInfo): "
                            "they are each broker's current epoch, so replicas are compared by log length.")
    for t in targets:
        if t.leader >= 0:
            messages.append(f"{t.name} is online (leader {t.leader}): nothing to recover.")
    stuck = [t for t in offline if t.chosen is None]
    failures = [f"No candidate for {t.name}: no live replica answered without error within "
                f"{args['recovery_duration_ms']} ms ({why_none(t)})." for t in stuck]
    plan = [t for t in offline if t.chosen is not None]
    if args["manual_recovery_output_file"]:
        messages.append(write_manual_file(args["manual_recovery_output_file"], plan, args["dry_run"]))
    exit_code = 1 if failures else 0
    if args["automated_recovery"] and plan:
        if args["dry_run"]:
            messages += [f"Would elect {t.chosen} for {t.name} ({describe_truncation(t)}) (dry run)." for t in plan]
        else:
            def elect() -> Result:
                # The controller may take ELECTION_TIMEOUT_MS over each batch of elections.
                with session.bounded(session.conn.timeout_s + ELECTION_TIMEOUT_MS / 1000):
                    results, notes = run_elections(session, path, plan, args["recovery_election_attempts"])
                tables.append(Table(["Topic", "Partition", "Result", "Leader", "Error"], results, name="elections"))
                failures.extend(f"Recovery failed for {r[0]}-{r[1]}: {r[4]}"
                                + (" (run unclean-recovery again: it asks the replicas anew)" if r[3] < 0 else "")
                                for r in results if r[2] not in ("elected", "already online"))
                return Result(tables=tables, messages=messages + notes + failures, exit_code=1 if failures else 0)
            return Proposal(question(plan), RECOVERY_REFUSAL, elect)
    elif args["automated_recovery"] and not offline:
        messages.append("No offline partition to recover.")
    return Result(tables=tables, messages=messages + failures, exit_code=exit_code)


# -- arguments -------------------------------------------------------------------------------


def check_arguments(session: Session, args: dict) -> None:
    """Every usage problem before anything is sent."""
    if not any(args[o.lstrip("-").replace("-", "_")] for o in SCOPE):
        raise UsageError("unclean-recovery needs one of --path-to-json-file or --all-offline-partitions "
                         "(see unclean-recovery --help)")
    if not any(args[o.lstrip("-").replace("-", "_")] for o in ACTIONS):
        raise UsageError("unclean-recovery needs at least one of --show-replica-info, "
                         "--manual-recovery-output-file or --automated-recovery")
    out = args["manual_recovery_output_file"]
    if out and os.path.lexists(os.path.expanduser(out)):  # write_new refuses it too, but only after the asking
        raise UsageError(f"{out} already exists: --manual-recovery-output-file writes a new file, "
                         "give another name")


def read_partitions_file(path: str) -> list[Key]:
    data = read_json(path, "--path-to-json-file", f"expected {FILE_EXAMPLE}")
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list) or not data["partitions"]:
        raise UsageError(f'{path} needs a non-empty "partitions" list, like {FILE_EXAMPLE}')
    keys: list[Key] = []
    for n, item in enumerate(data["partitions"], 1):
        if not (isinstance(item, dict) and isinstance(item.get("topic"), str) and item["topic"]
                and isinstance(item.get("partitions"), list) and item["partitions"]
                and all(is_id(p) for p in item["partitions"])):
            raise UsageError(f'{path}: entry {n} needs "topic" (a name) and "partitions" (a list of numbers '
                             f"0 or more), like {FILE_EXAMPLE}")
        keys += [(item["topic"], p) for p in item["partitions"]]
    counts: dict[Key, int] = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    dupes = sorted(k for k, n in counts.items() if n > 1)
    if dupes:
        raise UsageError(f"{path} lists partition {dupes[0][0]}-{dupes[0][1]} more than once: remove the duplicate")
    return keys


def read_targets(session: Session, args: dict) -> tuple[ClusterSnapshot, list[Target]]:
    """The targeted partitions from a fresh read of the cluster."""
    if args["path_to_json_file"]:
        keys = read_partitions_file(args["path_to_json_file"])
        snap = topics.read_for(session.conn, sorted({t for t, _ in keys}))
        for topic, partition in keys:
            known = snap.topics.get(topic)
            if known is None or partition >= len(known.partitions):
                where = (f"{topic} has {len(known.partitions)} partition(s)" if known
                         else f'topic "{topic}" does not exist')
                raise ShellError(f"Partition {topic}-{partition} does not exist: {where} "
                                 "(check with describe-topic); nothing was done.")
        parts = [snap.topics[t].partitions[p] for t, p in keys]
    else:
        snap = topics.read_for(session.conn, [args["topic"]] if args["topic"] else None)
        if args["topic"] and args["topic"] not in snap.topics:
            raise topics.missing(args["topic"])
        parts = [p for _, t in sorted(snap.topics.items()) for p in t.partitions if p.leader < 0]
    elr = topics.eligible_leaders(session.conn, [snap.topics[t] for t in sorted({p.topic for p in parts})])
    return snap, recovery.targets(snap, parts, elr)


def why_none(t: Target) -> str:
    return "; ".join(f"replica {r.broker}: {r.error or r.state}" for r in t.rows)


def describe_truncation(t: Target) -> str:
    n = t.truncated()
    said = f"truncates {n} message(s) of other answered replicas" if n else "no answered replica loses messages"
    silent = [str(r.broker) for r in t.rows if r.error is not None]
    if silent:
        end = next(r.log_end for r in t.rows if r.broker == t.chosen)
        said += (f"; replica(s) {','.join(silent)} did not answer: whatever they hold beyond offset {end} "
                 "is lost when they come back")
    return said


def replica_table(targets: list[Target]) -> Table:
    rows = []
    for t in targets:
        longest = t.longest()
        for r in t.rows:
            gap = longest - r.log_end if r.log_end >= 0 and longest >= 0 else None
            rows.append([t.topic, t.partition, r.broker, r.state, r.in_isr, r.in_elr,
                         r.epoch if r.log_end >= 0 else None, r.log_end if r.log_end >= 0 else None,
                         gap, r.error, r.broker == t.chosen])
    return Table(["Topic", "Partition", "Replica", "State", "LastIsr", "Elr", "LeaderEpoch", "LogEndOffset",
                  "Gap", "Error", "Chosen"], rows, name="replicas", kinds={"Chosen": "mark", "Elr": "mark"})


def write_manual_file(path: str, plan: list[Target], dry_run: bool) -> str:
    if dry_run:
        return f"Would write {len(plan)} designated leader(s) to {path} (dry run)."
    body = {"partitions": [{"topic": t.topic, "partition": t.partition, "designatedLeader": t.chosen}
                           for t in plan]}
    write_new(Path(path).expanduser(), json.dumps(body, indent=2) + "\n")
    return (f"Wrote {len(plan)} designated leader(s) to {path}: run elect-leaders --election-type designated "
            f"--path-to-json-file {path}")


# -- electing ----------------------------------------------------------------------------------


def question(plan: list[Target]) -> str:
    """What the elections do, for the confirmation: who is elected where, and what is lost."""
    names = ", ".join(f"{t.name} -> {t.chosen}" for t in plan[:10]) + (
        f" and {len(plan) - 10} more" if len(plan) > 10 else "")
    lost = sum(t.truncated() for t in plan)
    silent = sum(any(r.error is not None for r in t.rows) for t in plan)
    unknown = f" ({silent} partition(s) have replicas that did not answer and may lose more)" if silent else ""
    return f"Elect {names}: answered replicas lose {lost} message(s){unknown}. Continue?"


class StopAfterBatch:
    """Ctrl-C or SIGTERM during the elections: the batch in flight finishes, no other starts."""

    def __init__(self) -> None:
        self.requested = False
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopAfterBatch:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._stop)
        return self

    def _stop(self, signum: int, frame: object) -> None:
        self.requested = True

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def run_elections(session: Session, path: str, plan: list[Target],
                  attempts: int) -> tuple[list[list[Any]], list[str]]:
    """Elect each target's chosen replica; rows (topic, partition, result, leader, error)."""
    notes: list[str] = []
    with StopAfterBatch() as stop:
        outcomes = recovery.elect_all(session.conn, path, plan, attempts, ELECTION_TIMEOUT_MS,
                                      lambda: stop.requested, lambda elected: _unrestored(session, elected))
        if stop.requested:
            notes.append(f"Stopped by a signal after the batch in flight: {len(plan) - len(outcomes)} "
                         "partition(s) were not attempted; run the same command again to finish.")
    after = session.conn.read(sorted({t.topic for t in plan}))
    rows = []
    for t in plan:
        now = after.topics[t.topic].partitions[t.partition].leader if t.topic in after.topics else -1
        e = outcomes.get(t.key)
        if e is None:
            rows.append([t.topic, t.partition, "not attempted", now, "not attempted (stopped)"])
        elif e.state == ELECTED and now == t.chosen:
            rows.append([t.topic, t.partition, "elected", now, None])
        elif e.state == NOT_NEEDED and now >= 0:
            rows.append([t.topic, t.partition, "already online", now, None])
        elif e.state == ELECTED:
            rows.append([t.topic, t.partition, "failed", now, elected_instead(t, now)])
        else:
            rows.append([t.topic, t.partition, "failed", now, failure_lines.election_line(e)])
    if path == STOCK_PATH and any(r[2] == "elected" for r in rows):
        notes.append("The original replica order is restored: a later preferred election moves leadership "
                     "back to the preferred replica.")
    return rows, notes


def elected_instead(t: Target, now: int) -> str:
    """Stock path: the unclean election took another replica (the chosen one's broker stopped in
    between); say how much of the chosen log that cost."""
    if now < 0:
        return "elected, but the partition has no leader now"
    ends = {r.broker: r.log_end for r in t.rows}
    lost = (ends.get(t.chosen, -1) if t.chosen is not None else -1) - ends.get(now, -1)
    what = f": {lost} message(s) beyond offset {ends[now]} were truncated" if lost > 0 and ends.get(now, -1) >= 0 else ""
    return f"broker {now} was elected instead of {t.chosen} (whose broker stopped in between){what}"


def _unrestored(session: Session, elected: recovery.Elected) -> None:
    for line in failure_lines.reassignment_lines(elected.unrestored):
        session.notify(f"Could not restore the replica order of {line}")
