"""reassign-partitions: Kafka's kafka-reassign-partitions actions, files and messages, with
exit codes scripts can trust, a minimal-movement --generate, a progress bar, and throttles
that are always removed (the shell records what it set; see kafka_shell/admin/throttles.py).

Exit codes: 0 done, 1 failed, 2 bad input (nothing sent), 3 (--verify) still in progress,
130 stopped waiting with Ctrl-C (the move goes on).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import json
import time
from pathlib import Path

from kafka_shell.admin import configs, log_dirs, reassignments, throttles, topics
from kafka_shell.declarations import failure_lines
from kafka_shell.admin.reassignments import Move
from kafka_shell.base.deadline import Deadline
from kafka_shell.base.errors import ShellError, UsageError
from kafka_shell.base.files import FileExists, is_id, read_json, write_new
from kafka_shell.declarations.progress import ProgressBar
from kafka_shell.declarations.option_types import broker_ids
from kafka_shell.declarations.registry import INT64_MAX, Option, command, int_range
from kafka_shell.declarations.render import Result, Table, human_bytes

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ClusterSnapshot
    from kafka_shell.connection.session import Session

Key = tuple[str, int]
ReplicaKey = tuple[str, int, int]     # (topic, partition, broker)
ANY_LOG_DIR = "any"

IN_PROGRESS = 3
INTERRUPTED = 130
POLL_S = 0.2
GIVE_UP_S = 60.0        # --blocking stops when the cluster does not answer for this long
RETRY_S = 1.0



# Throttle rates are Kafka long configs.
rate = int_range(1, INT64_MAX, "a rate in bytes per second")


ACTIONS = ("--generate", "--execute", "--verify", "--cancel", "--list")
FILE = "--reassignment-json-file"
LOG_DIR_THROTTLE = "--replica-alter-log-dirs-throttle"
# Per action: options it requires (each tuple: exactly one of them), and options it permits.
# `--blocking` without an action waits for the reassignments in progress.
RULES: dict[str, tuple[tuple[tuple[str, ...], ...], set[str]]] = {
    "--generate": ((("--broker-list",), ("--topics-to-move-json-file", "--topic")),
                   {"--disable-rack-aware", "--proposed-json-file"}),
    "--execute": (((FILE,),), {"--additional", "--throttle", LOG_DIR_THROTTLE, "--blocking", "--preserve-throttles",
                               "--dry-run"}),
    "--verify": (((FILE,),), {"--blocking", "--preserve-throttles"}),
    "--cancel": (((FILE, "--all"),), {"--preserve-throttles", "--dry-run"}),
    "--list": ((), set()),
    "--blocking": ((), {"--preserve-throttles"}),
}


@command("reassign-partitions",
         Option("--generate", flag=True, help="Propose a minimal-movement, balanced assignment."),
         Option("--execute", flag=True, help="Start the reassignment of a JSON file."),
         Option("--verify", flag=True, help="Per-partition status; exit 0 done, 3 in progress, 1 failed."),
         Option("--cancel", flag=True, help="Cancel the moves of a file (or --all)."),
         Option("--list", flag=True, help="List the reassignments in progress."),
         Option(FILE, metavar="FILE", completer="path", help="Kafka's reassignment JSON file (log_dirs: each replica's log dir, or \"any\")."),
         Option("--topics-to-move-json-file", metavar="FILE", completer="path",
                help='{"topics":[{"topic":"t"}],"version":1} (with --generate).'),
         Option("--topic", repeatable=True, metavar="NAME", completer="topic",
                help="A topic to move (with --generate, instead of a topics file)."),
         Option("--broker-list", type=broker_ids, metavar="1,2,3", completer="broker",
                help="Brokers to place replicas on."),
         Option("--disable-rack-aware", flag=True, help="Ignore racks when generating."),
         Option("--proposed-json-file", metavar="FILE", completer="path",
                help="Also save the proposed assignment to FILE (with --generate)."),
         Option("--additional", flag=True, help="Execute while other reassignments run."),
         Option("--throttle", type=rate, metavar="BYTES/S",
                help="Replication throttle for the moves; removed when they end."),
         Option(LOG_DIR_THROTTLE, type=rate, metavar="BYTES/S",
                help="Throttle for the moves between log dirs (the file's log_dirs); removed when they end."),
         Option("--blocking", flag=True,
                help="Wait with a progress bar (with --execute or --verify; alone: all moves)."),
         Option("--all", flag=True, help="With --cancel: every reassignment in progress."),
         Option("--preserve-throttles", flag=True, help="Keep the throttles when the moves end."),
         mutates=True, topic_context=True, context_with=("--generate",),
         exclusive_groups=(ACTIONS, ("--topics-to-move-json-file", "--topic")),
         help="Move partition replicas between brokers (Kafka's kafka-reassign-partitions).",
         description=("Give exactly one action: --generate, --execute, --verify, --cancel or --list "
                      "(or --blocking alone to wait for the moves in progress). Exit codes: 0 done, "
                      "1 failed, 2 bad input, 3 --verify still in progress, 130 stopped waiting (the "
                      "move goes on). Throttles the shell sets are recorded in its data dir and removed "
                      "when the moves complete or are cancelled, also from a later session. A file's log_dirs "
                      "move each replica it names to that log dir of its broker (AlterReplicaLogDirs, sent to "
                      "the broker; again until a reassignment has brought the replica there), --verify "
                      "says each such move's state and --cancel sends a replica still moving back to its dir, "
                      "as Kafka's tool does."),
         examples=("reassign-partitions --generate --topic orders --broker-list 1,2,3,4",
                   "reassign-partitions --execute --reassignment-json-file move.json --throttle 10000000",
                   "reassign-partitions --verify --reassignment-json-file move.json --blocking",
                   "reassign-partitions --list"), tables=("current", "proposed", "status", "log_dirs", "reassignments"))
def reassign_partitions(session: Session, args: dict) -> Result:
    action = check_options(args)
    if action == "--generate":
        return generate(session, args)
    if action == "--list":
        return list_moves(session)
    if action == "--blocking":
        return wait_all(session, args)
    if args[dest(FILE)] is None:  # --cancel --all (the other actions require the file)
        return cancel(session, args, None)
    targets, dirs = read_plan(args[dest(FILE)])
    if action == "--execute":
        return execute(session, args, targets, dirs)
    if action == "--verify":
        return verify(session, args, targets, dirs)
    return cancel(session, args, targets, dirs)


def dest(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def check_options(args: dict) -> str:
    """The action, after Kafka's table of required and permitted options per action."""
    given = [n for n in ("--generate", "--execute", "--verify", "--cancel", "--list", FILE,
                         "--topics-to-move-json-file", "--topic", "--broker-list", "--disable-rack-aware",
                         "--proposed-json-file", "--additional", "--throttle", LOG_DIR_THROTTLE, "--blocking", "--all",
                         "--preserve-throttles", "--dry-run") if args.get(dest(n)) not in (None, False, [])]
    actions = [a for a in ACTIONS if a in given] or (["--blocking"] if "--blocking" in given else [])
    if not actions:
        raise UsageError("reassign-partitions needs one action: --generate, --execute, --verify, "
                         "--cancel or --list (see reassign-partitions --help)")
    action = actions[0]
    required, permitted = RULES[action]
    for group in required:
        if not any(n in given for n in group):
            raise UsageError(f'Action "{action}" needs {" or ".join(group)} (see reassign-partitions --help)')
        if len([n for n in group if n in given]) > 1:
            raise UsageError(f'Options {" and ".join(group)} can\'t be used together with action "{action}"')
    allowed = {action, *permitted, *(n for g in required for n in g)}
    for n in given:
        if n not in allowed:
            raise UsageError(f'Option "{n}" can\'t be used with action "{action}"')
    return action


# -- files --------------------------------------------------------------------------------------


def read_reassignment(path: str) -> dict[Key, list[int]]:
    """The replicas of each partition of Kafka's reassignment file."""
    return read_plan(path)[0]


def read_plan(path: str) -> tuple[dict[Key, list[int]], dict[ReplicaKey, str]]:
    """Kafka's reassignment file, checked as Kafka's tool checks it (each problem is one line):
    the replicas of each partition, and the log dir of each replica its `log_dirs` names (those
    "any" leaves where the broker puts them)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise UsageError(f'{path}: expected an object like {{"version":1,"partitions":[...]}}')
    if data.get("version", 1) != 1:
        raise UsageError(f"{path}: unsupported version {data['version']!r}: only version 1 is supported")
    entries = data.get("partitions")
    if not isinstance(entries, list):
        raise UsageError(f'{path}: no "partitions" list: give '
                         '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}')
    if not entries:
        raise UsageError(f"{path}: the partition list is empty: list at least one partition to move")
    out: dict[Key, list[int]] = {}
    log_dirs: dict[ReplicaKey, str] = {}
    for e in entries:
        if not (isinstance(e, dict) and isinstance(e.get("topic"), str) and is_id(e.get("partition"))
                and isinstance(e.get("replicas"), list) and all(is_id(b) for b in e["replicas"])):
            raise UsageError(f'{path}: bad entry {json.dumps(e)}: each needs "topic" (text), '
                             '"partition" (integer) and "replicas" (list of broker ids)')
        key = (e["topic"], e["partition"])
        name = f"{key[0]}-{key[1]}"
        replicas = e["replicas"]
        if not replicas:
            raise UsageError(f"{path}: the replica list of {name} is empty: give at least one broker")
        if key in out:
            raise UsageError(f"{path}: partition {name} is listed twice: list each partition once")
        if len(set(replicas)) != len(replicas):
            raise UsageError(f"{path}: the replicas of {name} ({_ids(replicas)}) name a broker twice: "
                             "list each broker once")
        dirs = e.get("log_dirs")
        if dirs is not None:
            if not isinstance(dirs, list) or len(dirs) != len(replicas):
                count = len(dirs) if isinstance(dirs, list) else "not a list"
                raise UsageError(f"{path}: log_dirs of {name} ({count}) must match its {len(replicas)} "
                                 'replicas: give one directory (or "any") per replica')
            if not all(isinstance(d, str) and d for d in dirs):
                raise UsageError(f'{path}: log_dirs of {name} must be directory paths (or "any"), one per replica')
            log_dirs.update({(key[0], key[1], b): d for b, d in zip(replicas, dirs) if d != ANY_LOG_DIR})
        out[key] = list(replicas)
    return out, log_dirs


def _ids(ids) -> str:
    return ",".join(map(str, ids))


def _name(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


def as_json(assignment: dict[Key, list[int]], dirs: dict[ReplicaKey, str] | None = None) -> str:
    """Kafka's file format, sorted by topic then partition; each replica's log dir from `dirs`
    (else "any": where its broker puts it)."""
    dirs = dirs or {}
    parts = [{"topic": t, "partition": p, "replicas": r, "log_dirs": [dirs.get((t, p, b), ANY_LOG_DIR) for b in r]}
             for (t, p), r in sorted(assignment.items())]
    return json.dumps({"version": 1, "partitions": parts}, separators=(",", ":"))


def assignment_table(assignment: dict[Key, list[int]], name: str) -> Table:
    """An assignment as data, for --output json/csv (the table format prints Kafka's JSON text)."""
    return Table(["Topic", "Partition", "Replicas"], [[t, p, r] for (t, p), r in sorted(assignment.items())],
                 name=name)


def write_file(path: Path, text: str) -> None:
    """A new file (an existing file or a symlink there is refused, with one line)."""
    write_new(path, text + "\n")


def save_rollback(source: str, text: str) -> Path:
    """Write `move.rollback.json` beside `move.json` (`move.rollback.2.json`... when taken),
    never over an earlier one and never through a symlink, dangling or not."""
    src = Path(source).expanduser().resolve()
    for n in itertools.count(1):
        path = src.with_name(f"{src.stem}.rollback.json" if n == 1 else f"{src.stem}.rollback.{n}.json")
        try:
            write_file(path, text)
            return path
        except FileExists:
            continue
    raise AssertionError("unreachable")


# -- cluster reads ------------------------------------------------------------------------------


def read_keys(session: Session, keys: Iterable[Key]) -> ClusterSnapshot:
    """A fresh read of the topics that `keys` (topic, partition) name."""
    return topics.read_for(session.conn, sorted({t for t, _ in keys}))


def cluster_key(session: Session) -> str:
    """Where the shell keeps a cluster's throttle record: its id, as read from the cluster (the
    cache of a one-shot run may not hold it yet, and a key that differs loses the record)."""
    conn = session.conn
    return conn.cluster_id or conn.read([]).cluster_id or conn.bootstrap


# -- --generate ---------------------------------------------------------------------------------


def generate(session: Session, args: dict) -> Result:
    names = args["topic"] or topics_to_move(args["topics_to_move_json_file"])
    plan = reassignments.generate(session.conn, names, args["broker_list"], not args["disable_rack_aware"])
    messages = [f"{plan.moved} replica(s) move (at least {plan.lower_bound} needed for balance)."]
    if args["proposed_json_file"]:
        write_file(Path(args["proposed_json_file"]).expanduser(), as_json(plan.proposed))
        messages.append(f"Saved the proposed assignment to {args['proposed_json_file']}: run it with "
                        f"reassign-partitions --execute --reassignment-json-file {args['proposed_json_file']}")
    text = (f"Current partition replica assignment\n{as_json(plan.current)}\n\n"
            f"Proposed partition reassignment configuration\n{as_json(plan.proposed)}")
    return Result(tables=[assignment_table(plan.current, "current"), assignment_table(plan.proposed, "proposed")],
                  text=text, messages=messages)


def topics_to_move(path: str) -> list[str]:
    data = read_json(path)
    if not isinstance(data, dict):
        data = {}
    topics = data.get("topics")
    if (not isinstance(topics, list) or not topics
            or not all(isinstance(t, dict) and isinstance(t.get("topic"), str) for t in topics)):
        raise UsageError(f'{path}: expected {{"topics":[{{"topic":"t"}}],"version":1}} with at least one topic')
    if data.get("version", 1) != 1:
        raise UsageError(f"{path}: unsupported version {data['version']!r}: only version 1 is supported")
    return list(dict.fromkeys(t["topic"] for t in topics))


# -- --execute ----------------------------------------------------------------------------------


def execute(session: Session, args: dict, targets: dict[Key, list[int]], dirs: dict[ReplicaKey, str]) -> Result:
    path = args[dest(FILE)]
    snap = read_keys(session, targets)
    current = reassignments.current_assignment(snap.topics, targets)
    for key in targets:
        if key not in current:
            what = f'Topic "{key[0]}"' if key[0] not in snap.topics else f"Partition {_name(key)}"
            raise UsageError(f"{path}: {what} does not exist: fix the file (see describe-topic)")
    live = snap.brokers
    for key, replicas in targets.items():
        unknown = [b for b in replicas if b not in live]
        if unknown:
            raise UsageError(f"{path}: the replicas of {_name(key)} name unknown broker(s) {_ids(unknown)}: "
                             f"live brokers are {_ids(sorted(live))}")
    active = reassignments.ongoing(session.conn)
    if active and not args["additional"]:
        raise ShellError(f"Cannot execute: {len(active)} partition reassignment(s) are in progress "
                         f"({', '.join(_name(k) for k in sorted(active)[:5])}): wait for them, or use "
                         "--additional to add this one")
    record = throttles.needed(current, targets, args["throttle"]) if args["throttle"] else None
    dir_rate = args[dest(LOG_DIR_THROTTLE)]
    if dir_rate and not dirs:
        raise UsageError(f"{LOG_DIR_THROTTLE} throttles moves between log dirs, and {path} names none: give "
                         'replicas their dir in "log_dirs", or leave the option out')
    dir_brokers = sorted({b for _, _, b in dirs})
    rollback = as_json(current)
    before = assignment_table(current, "current")
    if args["dry_run"]:
        lines = [f"Would start the reassignment of {len(targets)} partition(s) (dry run)."]
        if record:
            lines.append(f"Would throttle replication to {args['throttle']} B/s on broker(s) "
                         f"{_ids(record['brokers'])} (dry run).")
        if dir_rate:
            lines.append(f"Would throttle the moves between log dirs to {dir_rate} B/s on broker(s) "
                         f"{_ids(dir_brokers)} (dry run).")
        if dirs:
            lines.append(f"Would move {len(dirs)} replica(s) to the log dirs the file names: "
                         f"{', '.join(f'{_replica(r)} to {d}' for r, d in sorted(dirs.items()))} (dry run).")
        return Result(tables=[before], text=f"Current partition replica assignment\n{rollback}", messages=lines)
    saved = save_rollback(path, rollback)
    messages = [f"Saved the current assignment to {saved}: use it as the --reassignment-json-file "
                "option during rollback."]
    if record:
        messages += set_throttles(session, record)
    if dir_rate:
        messages += set_log_dir_throttle(session, dir_brokers, dir_rate)
    done = reassignments.alter(session.conn, targets)
    refused = failure_lines.reassignment_lines(done.errors)
    started = sorted(done.rows)
    if started:
        messages.append(f"Successfully started partition reassignment(s) for {','.join(map(_name, started))}.")
    text = f"Current partition replica assignment\n{rollback}"
    if refused:
        return Result(tables=[before], text=text, messages=messages + refused, exit_code=1)
    if dirs:
        moved, failed = start_log_dir_moves(session, dirs)
        messages += moved
        if failed:
            return Result(tables=[before], text=text, messages=messages + failed, exit_code=1)
    if args["blocking"]:
        session.stderr.write("\n".join(messages) + "\n")
        waited = wait_and_finish(session, args, set(targets), f"--verify --reassignment-json-file {path} ", dirs)
        return Result(tables=[before, *waited.tables], text="\n\n".join(filter(None, (text, waited.text))),
                      messages=waited.messages, exit_code=waited.exit_code)
    messages.append(f"Check it with: reassign-partitions --verify --reassignment-json-file {path}")
    return Result(tables=[before], text=text, messages=messages)


def _replica(key: ReplicaKey) -> str:
    """Kafka's TopicPartitionReplica as its tool prints it: topic-partition-broker."""
    return f"{key[0]}-{key[1]}-{key[2]}"


def start_log_dir_moves(session: Session, dirs: dict[ReplicaKey, str]) -> tuple[list[str], list[str]]:
    """Ask each replica's broker to move it to its dir, again while a replica has not reached its
    broker yet (REPLICA_NOT_AVAILABLE: the reassignment is still bringing it), within one
    --timeout, as Kafka's tool does: (the moves started, the lines of those that failed)."""
    deadline = session.conn.deadline()
    pending = dict(dirs)
    started: list[str] = []
    while True:
        answers = log_dirs.alter(session.conn, pending, deadline)
        for key, path in answers.rows.items():
            started.append(f"Successfully started moving log directory to {path} for replica "
                           f"{key[0]}-{key[1]} with broker {key[2]}")
            del pending[key]
        failed = {k: e for k, e in answers.errors.items() if not log_dirs.not_there_yet(e)}
        if failed:
            return started, failure_lines.log_dir_move_lines(failed)
        if not pending:
            return started, []
        if not deadline.pause(POLL_S):
            return started, [f"Timed out before log directory move{'s' if len(pending) > 1 else ''} could be started "
                             f"for: {','.join(map(_replica, sorted(pending)))}: the replicas have not reached their "
                             "brokers; run --execute again once the reassignment has brought them, or raise --timeout"]


def set_throttles(session: Session, record: dict) -> list[str]:
    """Record, then set, the throttles of a move (merged with those an earlier move left)."""
    key = cluster_key(session)
    merged = throttles.merge(throttles.load(key), record)
    throttles.save(key, merged)
    for topic in record["topics"]:
        configs.alter(session.conn, configs.TOPICS, [topic], throttles.topic_values(merged["topics"][topic]), [], False)
    rates = {k: str(record["rate"]) for k in throttles.RATE_KEYS}
    skipped = []
    for b in record["brokers"]:
        try:
            configs.alter(session.conn, configs.BROKERS, [str(b)], rates, [], False)
        except ShellError:
            skipped.append(b)  # a down broker must not stop the move (Kafka's tool fails here)
    lines = [f"Throttled replication to {record['rate']} B/s on broker(s) "
             f"{_ids(b for b in record['brokers'] if b not in skipped)} and the moving replicas of "
             f"topic(s) {', '.join(sorted(record['topics']))}."]
    if skipped:
        lines.append(f"Warning: could not throttle broker(s) {_ids(skipped)} (not reachable).")
    return lines


def set_log_dir_throttle(session: Session, brokers: list[int], rate: int) -> list[str]:
    """Record, then set, the throttle of the moves between log dirs on their brokers (Kafka's
    replica.alter.log.dirs.io.max.bytes.per.second)."""
    key = cluster_key(session)
    throttles.save(key, throttles.with_log_dir_throttle(throttles.load(key), brokers, rate))
    skipped = []
    for b in brokers:
        try:
            configs.alter(session.conn, configs.BROKERS, [str(b)], {throttles.LOG_DIR_RATE_KEY: str(rate)}, [], False)
        except ShellError:
            skipped.append(b)
    lines = [f"The replica-alter-dir throttle limit was set to {rate} B/s on broker(s) "
             f"{_ids(b for b in brokers if b not in skipped)}."]
    if skipped:
        lines.append(f"Warning: could not throttle broker(s) {_ids(skipped)} (not reachable).")
    return lines


def _clear_log_dir_throttle(session: Session, entry: dict | None) -> tuple[list[str], dict | None]:
    """Remove the log dir throttle once no replica of its brokers is moving between dirs: (the
    lines, what stays recorded)."""
    if not entry:
        return [], None
    found = log_dirs.describe(session.conn, entry["brokers"])
    moving = sum(1 for _, r in found.replicas(include_future=True) if r.is_future)
    if moving or found.errors:
        why = f"{moving} replica(s) still moving between log dirs" if moving else \
            f"broker(s) {_ids(sorted(found.errors))} did not describe their log dirs"
        return [f"Log dir throttle kept: {why}."], entry
    left = []
    for b in entry["brokers"]:
        try:
            configs.alter(session.conn, configs.BROKERS, [str(b)], {}, [throttles.LOG_DIR_RATE_KEY], False)
        except ShellError:
            left.append(b)
    done = [b for b in entry["brokers"] if b not in left]
    lines = [f"Removed the replica-alter-dir throttle kafka-shell set on broker(s) {_ids(done)}."] if done else []
    if left:
        lines.append(f"Warning: broker(s) {_ids(left)} not reachable: their log dir throttle stays; "
                     "run reassign-partitions --verify again later to remove it.")
    return lines, {**entry, "brokers": left} if left else None


def clear_throttles(session: Session, preserve: bool, moving: dict[Key, Move] | None = None) -> list[str]:
    """Remove the throttles the shell recorded for this cluster once none of the recorded
    partitions is still moving. What could not be removed stays recorded for a later try."""
    key = cluster_key(session)
    record = throttles.load(key)
    if not record:
        return []
    if preserve:
        return ["Throttles kept (--preserve-throttles)."]
    moving = reassignments.ongoing(session.conn) if moving is None else moving
    still = [p for p in record["partitions"] if tuple(_split(p)) in moving]
    if still:
        return [f"Throttles kept: {len(still)} throttled partition(s) still moving."]
    lines, dir_entry = _clear_log_dir_throttle(session, record.get(throttles.LOG_DIRS))
    left_brokers = []
    for b in record["brokers"]:
        try:
            configs.alter(session.conn, configs.BROKERS, [str(b)], {}, list(throttles.RATE_KEYS), False)
        except ShellError:
            left_brokers.append(b)
    names = [t for t in record["topics"] if t in session.conn.read(list(record["topics"])).topics] \
        if record["topics"] else []
    if names:
        configs.alter(session.conn, configs.TOPICS, names, {}, [throttles.LEADER_REPLICAS, throttles.FOLLOWER_REPLICAS],
                      False)
    done = [b for b in record["brokers"] if b not in left_brokers]
    kept = {**record, "brokers": left_brokers, "topics": {}, "partitions": [], throttles.LOG_DIRS: dir_entry}
    throttles.save(key, kept if left_brokers or dir_entry else None)
    if done or names:
        lines.insert(0, f"Removed the replication throttles kafka-shell set on broker(s) {_ids(done)}"
                     + (f" and topic(s) {', '.join(sorted(names))}." if names else "."))
    if left_brokers:
        lines.append(f"Warning: broker(s) {_ids(left_brokers)} not reachable: their throttle stays; "
                     "run reassign-partitions --verify again later to remove it.")
    return lines


def _split(name: str) -> tuple[str, int]:
    topic, _, p = name.rpartition(":")
    return topic, int(p)


# -- --verify, --cancel, --list, --blocking -------------------------------------------------------


def verify(session: Session, args: dict, targets: dict[Key, list[int]], dirs: dict[ReplicaKey, str]) -> Result:
    path = args[dest(FILE)]
    if args["blocking"]:
        return wait_and_finish(session, args, set(targets), f"--verify --reassignment-json-file {path} ", dirs)
    return status(session, args, targets, dirs=dirs)


# The state of one replica's log dir move, as Kafka's tool names them.
DIR_DONE, DIR_MOVING, DIR_ELSEWHERE, DIR_NOT_MOVING, DIR_MISSING = (
    "completed", "in progress", "moving elsewhere", "not moving", "missing")


def log_dir_states(session: Session, dirs: dict[ReplicaKey, str]) -> tuple[list[list], list[str]]:
    """Each replica move of the file judged by its broker's DescribeLogDirs: rows (topic,
    partition, broker, state, log dir, target), with Kafka's lines; a broker that did not describe
    its dirs is one line (and its replicas "missing")."""
    found = log_dirs.describe(session.conn, sorted({b for _, _, b in dirs}),
                              {t: sorted({p for tt, p, _ in dirs if tt == t}) for t, _, _ in dirs})
    where = found.placement()
    rows, lines = [], failure_lines.log_dir_lines(found.errors)
    for key, target in sorted(dirs.items()):
        at = where.get(key)
        name = f"{key[0]}-{key[1]}"
        if at is None or at.current is None:
            state, line = DIR_MISSING, f"Partition {name} cannot be found in any live log directory on broker {key[2]}."
        elif at.future is not None and at.future == target:
            state, line = DIR_MOVING, f"Reassignment of replica {_replica(key)} is still in progress."
        elif at.future is not None:
            state, line = DIR_ELSEWHERE, (f"Partition {name} on broker {key[2]} is being moved to log dir "
                                          f"{at.future} instead of {target}.")
        elif at.current == target:
            state, line = DIR_DONE, f"Reassignment of replica {_replica(key)} completed successfully."
        else:
            state, line = DIR_NOT_MOVING, (f"Partition {name} on broker {key[2]} is not being moved from log dir "
                                           f"{at.current} to {target}.")
        rows.append([key[0], key[1], key[2], state, at.current if at else None, target])
        lines.append(line)
    return rows, lines


def status(session: Session, args: dict, targets: dict[Key, list[int]],
           current: dict[Key, list[int]] | None = None, dirs: dict[ReplicaKey, str] | None = None) -> Result:
    """Each partition judged against the file: by the controller (in progress or not) and by
    `current` (what the brokers agree on; a fresh read when not given)."""
    moving, verified = reassignments.verify(session.conn, targets, current)
    if current is None and any(v.state == reassignments.DIFFERS for v in verified.values()):
        # The broker asked may not have the controller's last change yet: judge once all agree.
        current, lagging = agreed_assignment(session, set(targets), session.conn.deadline())
        if lagging:
            return Result.message(lagging, exit_code=1)
        moving, verified = reassignments.verify(session.conn, targets, current)
    lines, rows, failed, running = ["Status of partition reassignment:"], [], 0, 0
    for key, v in verified.items():
        name, want = _name(key), targets[key]
        if v.state == reassignments.IN_PROGRESS:
            running += 1
            lines.append(f"Reassignment of partition {name} is still in progress.")
        elif v.state == reassignments.MISSING:
            failed += 1
            lines.append(f"Reassignment of partition {name} failed: the partition does not exist.")
        elif v.state == reassignments.COMPLETED:
            lines.append(f"Reassignment of partition {name} is completed.")
        else:
            failed += 1
            lines.append(f"There is no active reassignment of partition {name}, but replica set is "
                         f"{_ids(v.replicas or [])} rather than {_ids(want)}.")
        rows.append([key[0], key[1], v.state, v.replicas, want])
    tables = [Table(["Topic", "Partition", "Status", "Replicas", "Target"], rows, name="status")]
    if dirs:
        dir_rows, dir_lines = log_dir_states(session, dirs)
        lines += ["", "Reassignment of replicas' log dirs:", *dir_lines]
        tables.append(Table(["Topic", "Partition", "Broker", "Status", "LogDir", "Target"], dir_rows, name="log_dirs"))
        failed += sum(r[3] not in (DIR_DONE, DIR_MOVING) for r in dir_rows)
        running += sum(r[3] == DIR_MOVING for r in dir_rows)
    messages: list[str] = []
    if failed:
        messages.append(f"{failed} partition(s) are not as the file asks.")
        code = 1
    elif running:
        messages.append(f"{running} partition(s) or replica(s) still moving: check again later, or wait "
                        f"with reassign-partitions --verify --reassignment-json-file {args[dest(FILE)]} --blocking")
        code = IN_PROGRESS
    else:
        messages += clear_throttles(session, args["preserve_throttles"], moving)
        code = 0
    return Result(tables=tables, text="\n".join(lines), messages=messages, exit_code=code)


def cancel(session: Session, args: dict, targets: dict[Key, list[int]] | None,
           dirs: dict[ReplicaKey, str] | None = None) -> Result:
    if dirs:
        return _cancel_with_dir_moves(session, args, targets or {}, dirs)
    moving = reassignments.ongoing(session.conn)
    wanted = sorted(moving if targets is None else [k for k in targets if k in moving])
    if not wanted:
        return Result.message("None of the specified partition reassignments are active.")
    if args["dry_run"]:
        return Result.message(f"Would cancel the reassignment of {','.join(map(_name, wanted))} (dry run).")
    cancelled = reassignments.alter(session.conn, {k: None for k in wanted})
    done = sorted(cancelled.rows)
    messages = [f"Successfully cancelled partition reassignment(s) for {','.join(map(_name, done))}."] if done else []
    if cancelled.errors:
        return Result.message(*messages, *failure_lines.reassignment_lines(cancelled.errors), exit_code=1)
    messages += clear_throttles(session, args["preserve_throttles"])
    return Result.message(*messages)


def _cancel_with_dir_moves(session: Session, args: dict, targets: dict[Key, list[int]],
                           dirs: dict[ReplicaKey, str]) -> Result:
    """Kafka's --cancel of a file with log_dirs: the partition reassignments, then each replica
    still moving between log dirs is sent back to the dir it is in (its future replica goes)."""
    moving = reassignments.ongoing(session.conn)
    wanted = sorted(k for k in targets if k in moving)
    active = moving_log_dirs(session, dirs)
    if args["dry_run"]:
        return Result.message(f"Would cancel the reassignment of {','.join(map(_name, wanted)) or 'no partition'} and "
                              f"the log dir moves of {','.join(map(_replica, sorted(active))) or 'no replica'} (dry run).")
    messages: list[str] = []
    if wanted:
        cancelled = reassignments.alter(session.conn, {k: None for k in wanted})
        if cancelled.rows:
            messages.append(f"Successfully cancelled partition reassignment(s) for {','.join(map(_name, sorted(cancelled.rows)))}.")
        if cancelled.errors:
            return Result.message(*messages, *failure_lines.reassignment_lines(cancelled.errors), exit_code=1)
    else:
        messages.append("None of the specified partition reassignments are active.")
    if not active:
        messages.append("None of the specified partition moves are active.")
    else:
        sent, failed = send_back(session, active)
        messages += sent
        if failed:
            return Result.message(*messages, *failed, exit_code=1)
    messages += clear_throttles(session, args["preserve_throttles"])
    return Result.message(*messages)


def moving_log_dirs(session: Session, dirs: dict[ReplicaKey, str]) -> dict[ReplicaKey, str]:
    """The replicas of `dirs` still moving between log dirs (to their target or elsewhere), each
    with the dir it is in."""
    return {(t, p, b): now for t, p, b, state, now, _ in log_dir_states(session, dirs)[0]
            if state in (DIR_MOVING, DIR_ELSEWHERE) and now}


def send_back(session: Session, active: dict[ReplicaKey, str]) -> tuple[list[str], list[str]]:
    """Cancel log dir moves as Kafka's --cancel does: each replica is moved to the dir it is in,
    so its future replica goes: (the lines, those of the moves that failed)."""
    started, failed = start_log_dir_moves(session, active)
    done = [f"Successfully cancelled the log dir move(s) of {','.join(map(_replica, sorted(active)))}."] if started else []
    return done, failed


def list_moves(session: Session) -> Result:
    moving = sorted(reassignments.ongoing(session.conn).items())
    table = Table(["Topic", "Partition", "Replicas", "Adding", "Removing"],
                  [[t, p, m.replicas, m.adding, m.removing] for (t, p), m in moving], name="reassignments")
    if not moving:
        return Result(tables=[table], text="No partition reassignments found.")
    lines = ["Current partition reassignments:"] + [
        f"{_name(k)}: replicas: {_ids(m.replicas)}. adding: {_ids(m.adding)}. removing: {_ids(m.removing)}."
        for k, m in moving]
    return Result(tables=[table], text="\n".join(lines))


def wait_all(session: Session, args: dict) -> Result:
    return wait_and_finish(session, args, None, "")


def wait_and_finish(session: Session, args: dict, keys: set[Key] | None, resume: str,
                    dirs: dict[ReplicaKey, str] | None = None) -> Result:
    """Wait for the moves (of `keys`, or all) with a progress bar, and for the replicas' moves
    between log dirs (`dirs`), then verify / clear throttles."""
    try:
        wait(session, keys, Progress(session.stderr))
        while dirs and any(r[3] == DIR_MOVING for r in log_dir_states(session, dirs)[0]):
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        return Result.message("Stopped waiting; the reassignment goes on. Resume waiting with: "
                              f"reassign-partitions {resume}--blocking", exit_code=INTERRUPTED)
    with session.bounded():   # the waiting had no bound but the moves' end: what follows has --timeout
        if keys is not None and args.get(dest(FILE)):
            # The brokers learn the controller's last change a moment later: judge once they agree.
            agreed, lagging = agreed_assignment(session, keys, session.conn.deadline())
            if lagging:
                return Result.message(lagging, exit_code=1)
            return status(session, args, read_reassignment(args[dest(FILE)]), agreed, dirs)
        return Result.message("No partition reassignment in progress.",
                              *clear_throttles(session, args["preserve_throttles"], {}))


def agreed_assignment(session: Session, keys: set[Key], deadline: Deadline) -> tuple[dict[Key, list[int]], str | None]:
    """The replicas of `keys` once every live broker's metadata says the same (each learns the
    controller's change a moment after it is made), within `deadline`: (the assignment, None), or
    (what most brokers that answered show, the line naming those that show otherwise or did not
    answer)."""
    names = sorted({t for t, _ in keys})
    while True:
        snap = read_keys(session, keys)
        views = topics.views_by_broker(session.conn, sorted(snap.brokers), names, deadline)
        failed = views.errors
        seen = {b: reassignments.current_assignment(view, keys) for b, view in views.rows.items()}
        votes = Counter(tuple(sorted((k, tuple(r)) for k, r in a.items())) for a in seen.values())
        most = {k: list(r) for k, r in votes.most_common(1)[0][0]} if votes else {}
        if not failed and all(assignment == most for assignment in seen.values()):
            return most, None
        if not deadline.pause(POLL_S):
            break
    differ = sorted(b for b, assignment in seen.items() if assignment != most)
    why = [f"broker(s) {_ids(differ)} still show other replicas"] if differ else []
    why += [str(failed[b]) for b in sorted(failed)]
    return most, (f"The controller finished the reassignment, but after {deadline.elapsed():.1f} s "
                   f"the brokers' metadata does not agree yet ({'; '.join(why)}): check it with "
                   "reassign-partitions --verify, or raise --timeout.")


def wait(session: Session, keys: set[Key] | None, progress: Progress) -> None:
    """Poll the controller until none of `keys` (or nothing at all) is moving. A controller
    change is followed by the connection manager; other failures are retried for a while."""
    total = len(keys) if keys is not None else None
    failing: Deadline | None = None   # from the first failure of a run of them
    while True:
        try:
            with session.bounded():   # each poll within --timeout
                moving = reassignments.ongoing(session.conn)
                pending = {k: m for k, m in moving.items() if keys is None or k in keys}
                if total is None:
                    total = len(pending)
                if not pending:
                    progress.done()
                    return
                copied, size = reassignments.copy_progress(session.conn, pending)
            failing = None
        except ShellError as exc:
            failing = failing or Deadline(GIVE_UP_S)
            if failing.expired:
                raise
            session.notify(f"Waiting: {exc} (retrying)")
            failing.pause(RETRY_S)
            continue
        progress.show(max(total, len(pending)) - len(pending), max(total, len(pending)), copied, size)
        time.sleep(POLL_S)


class Progress:
    """The wait's progress: partitions done, bytes copied and an ETA from the copy rate seen."""

    def __init__(self, out) -> None:
        self.bar = ProgressBar(out, log_changes=True)
        self.start = time.monotonic()
        self.first: int | None = None

    def show(self, done: int, total: int, copied: int, size: int) -> None:
        self.first = copied if self.first is None else self.first
        elapsed = time.monotonic() - self.start
        speed = (copied - self.first) / elapsed if elapsed > 0 else 0
        eta = f"ETA {fmt_seconds((size - copied) / speed)}" if speed > 0 and size > copied else "ETA -"
        fraction = copied / size if size else done / total if total else 1.0
        self.bar.show(fraction, f"{done}/{total} partitions, {human_bytes(int(copied))}/{human_bytes(int(size))} copied",
                      f", {eta}")

    def done(self) -> None:
        self.bar.close()


def fmt_seconds(s: float) -> str:
    s = int(s + 0.5)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
