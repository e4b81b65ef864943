"""reassign-partitions: Kafka's kafka-reassign-partitions actions, files and messages, with
exit codes scripts can trust, a minimal-movement --generate, a progress bar, and throttles
that are always removed (the shell records what it set; see kafka_shell/admin/throttles.py).

Exit codes: 0 done, 1 failed, 2 bad input (nothing sent), 3 (--verify) still in progress,
130 stopped waiting with Ctrl-C (the move goes on).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_shell.admin import cluster, log_dirs, reassignments, throttles, topics
from kafka_shell.declarations import failure_lines
from kafka_shell.admin.log_dirs import ReplicaKey
from kafka_shell.admin.reassignments import Move
from kafka_shell.admin.assignment_plan import PlanError
from kafka_shell.base.errors import ShellError, UsageError
from kafka_shell.base.files import FileExists, read_json
from kafka_shell.declarations.progress import CopyProgress
from kafka_shell.declarations.option_types import broker_ids, rate
from kafka_shell.declarations.reassignment_files import as_json, read_plan, write_file
from kafka_shell.declarations.reassignment_lines import (cleared_lines, dir_moves_lines, dir_state_lines, ids,
                                                         log_dir_throttled_lines, replica, sent_back_lines,
                                                         throttled_lines)
from kafka_shell.declarations.registry import Option, command
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

Key = tuple[str, int]

IN_PROGRESS = 3
INTERRUPTED = 130
POLL_S = 0.2


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


def _name(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


def assignment_table(assignment: dict[Key, list[int]], name: str) -> Table:
    """An assignment as data, for --output json/csv (the table format prints Kafka's JSON text)."""
    return Table(["Topic", "Partition", "Replicas"], [[t, p, r] for (t, p), r in sorted(assignment.items())],
                 name=name)


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


# -- --generate ---------------------------------------------------------------------------------


def generate(session: Session, args: dict) -> Result:
    names = args["topic"] or topics_to_move(args["topics_to_move_json_file"])
    if absent := cluster.absent(session.conn, args["broker_list"]):
        raise failure_lines.absent_error(absent)
    try:
        plan = reassignments.generate(session.conn, names, args["broker_list"], not args["disable_rack_aware"])
    except PlanError as exc:
        raise UsageError(failure_lines.plan_line(exc)) from None
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
    snap = topics.read_keys(session.conn, targets)
    current = reassignments.current_assignment(snap.topics, targets)
    for key in targets:
        if key not in current:
            what = f'Topic "{key[0]}"' if key[0] not in snap.topics else f"Partition {_name(key)}"
            raise UsageError(f"{path}: {what} does not exist: fix the file (see describe-topic)")
    live = snap.brokers
    for key, replicas in targets.items():
        unknown = [b for b in replicas if b not in live]
        if unknown:
            raise UsageError(f"{path}: the replicas of {_name(key)} name unknown broker(s) {ids(unknown)}: "
                             f"live brokers are {ids(sorted(live))}")
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
                         f"{ids(record['brokers'])} (dry run).")
        if dir_rate:
            lines.append(f"Would throttle the moves between log dirs to {dir_rate} B/s on broker(s) "
                         f"{ids(dir_brokers)} (dry run).")
        if dirs:
            lines.append(f"Would move {len(dirs)} replica(s) to the log dirs the file names: "
                         f"{', '.join(f'{replica(r)} to {d}' for r, d in sorted(dirs.items()))} (dry run).")
        return Result(tables=[before], text=f"Current partition replica assignment\n{rollback}", messages=lines)
    saved = save_rollback(path, rollback)
    messages = [f"Saved the current assignment to {saved}: use it as the --reassignment-json-file "
                "option during rollback."]
    if record:
        messages += throttled_lines(record, throttles.set_replication(session.conn, record))
    if dir_rate:
        messages += log_dir_throttled_lines(dir_brokers, dir_rate,
                                            throttles.set_log_dirs(session.conn, dir_brokers, dir_rate))
    done = reassignments.alter(session.conn, targets)
    refused = failure_lines.reassignment_lines(done.errors)
    started = sorted(done.rows)
    if started:
        messages.append(f"Successfully started partition reassignment(s) for {','.join(map(_name, started))}.")
    text = f"Current partition replica assignment\n{rollback}"
    if refused:
        return Result(tables=[before], text=text, messages=messages + refused, exit_code=1)
    if dirs:
        moved, failed = dir_moves_lines(log_dirs.start_moves(session.conn, dirs, POLL_S))
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


def clear_throttles(session: Session, preserve: bool, moving: dict[Key, Move] | None = None) -> list[str]:
    """Remove the throttles the shell recorded for this cluster once none of the recorded
    partitions is still moving. What could not be removed stays recorded for a later try."""
    return cleared_lines(throttles.clear(session.conn, preserve, moving))


# -- --verify, --cancel, --list, --blocking -------------------------------------------------------


def verify(session: Session, args: dict, targets: dict[Key, list[int]], dirs: dict[ReplicaKey, str]) -> Result:
    path = args[dest(FILE)]
    if args["blocking"]:
        return wait_and_finish(session, args, set(targets), f"--verify --reassignment-json-file {path} ", dirs)
    return status(session, args, targets, dirs=dirs)


def status(session: Session, args: dict, targets: dict[Key, list[int]],
           current: dict[Key, list[int]] | None = None, dirs: dict[ReplicaKey, str] | None = None) -> Result:
    """Each partition judged against the file: by the controller (in progress or not) and by
    `current` (what the brokers agree on; a fresh read when not given)."""
    moving, verified = reassignments.verify(session.conn, targets, current)
    if current is None and any(v.state == reassignments.DIFFERS for v in verified.values()):
        # The broker asked may not have the controller's last change yet: judge once all agree.
        agreement = reassignments.agreed(session.conn, set(targets), session.conn.deadline(), POLL_S, targets)
        if not agreement.agreed:
            return Result.message(disagreement_line(agreement), exit_code=1)
        current = agreement.assignment
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
                         f"{ids(v.replicas or [])} rather than {ids(want)}.")
        rows.append([key[0], key[1], v.state, v.replicas, want])
    tables = [Table(["Topic", "Partition", "Status", "Replicas", "Target"], rows, name="status")]
    if dirs:
        states = log_dirs.move_states(session.conn, dirs)
        lines += ["", "Reassignment of replicas' log dirs:", *dir_state_lines(states)]
        dir_rows = [[t, p, b, m.state, m.current, m.target] for (t, p, b), m in states.moves.items()]
        tables.append(Table(["Topic", "Partition", "Broker", "Status", "LogDir", "Target"], dir_rows, name="log_dirs"))
        failed += sum(m.state not in (log_dirs.DONE, log_dirs.MOVING) for m in states.moves.values())
        running += sum(m.state == log_dirs.MOVING for m in states.moves.values())
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
    active = log_dirs.move_states(session.conn, dirs).moving()
    if args["dry_run"]:
        return Result.message(f"Would cancel the reassignment of {','.join(map(_name, wanted)) or 'no partition'} and "
                              f"the log dir moves of {','.join(map(replica, sorted(active))) or 'no replica'} (dry run).")
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
        sent, failed = sent_back_lines(active, log_dirs.start_moves(session.conn, active, POLL_S))
        messages += sent
        if failed:
            return Result.message(*messages, *failed, exit_code=1)
    messages += clear_throttles(session, args["preserve_throttles"])
    return Result.message(*messages)


def list_moves(session: Session) -> Result:
    moving = sorted(reassignments.ongoing(session.conn).items())
    table = Table(["Topic", "Partition", "Replicas", "Adding", "Removing"],
                  [[t, p, m.replicas, m.adding, m.removing] for (t, p), m in moving], name="reassignments")
    if not moving:
        return Result(tables=[table], text="No partition reassignments found.")
    lines = ["Current partition reassignments:"] + [
        f"{_name(k)}: replicas: {ids(m.replicas)}. adding: {ids(m.adding)}. removing: {ids(m.removing)}."
        for k, m in moving]
    return Result(tables=[table], text="\n".join(lines))


def wait_all(session: Session, args: dict) -> Result:
    return wait_and_finish(session, args, None, "")


def wait_and_finish(session: Session, args: dict, keys: set[Key] | None, resume: str,
                    dirs: dict[ReplicaKey, str] | None = None) -> Result:
    """Wait for the moves (of `keys`, or all) with a progress bar, and for the replicas' moves
    between log dirs (`dirs`), then verify / clear throttles."""
    try:
        progress = CopyProgress(session.stderr)
        reassignments.wait(session.conn, keys, _reporter(session, progress))
        progress.done()
        if dirs:
            log_dirs.wait_for_moves(session.conn, dirs, POLL_S)
    except KeyboardInterrupt:
        return Result.message("Stopped waiting; the reassignment goes on. Resume waiting with: "
                              f"reassign-partitions {resume}--blocking", exit_code=INTERRUPTED)
    with session.bounded():   # the waiting had no bound but the moves' end: what follows has --timeout
        if keys is not None and args.get(dest(FILE)):
            # The brokers learn the controller's last change a moment later: judge once they agree.
            targets = read_reassignment(args[dest(FILE)])
            agreement = reassignments.agreed(session.conn, keys, session.conn.deadline(), POLL_S, targets)
            if not agreement.agreed:
                return Result.message(disagreement_line(agreement), exit_code=1)
            return status(session, args, targets, agreement.assignment, dirs)
        return Result.message("No partition reassignment in progress.",
                              *clear_throttles(session, args["preserve_throttles"], {}))


def disagreement_line(agreement: reassignments.Agreement) -> str:
    """The brokers' metadata does not agree on a finished move yet: who shows otherwise, or did
    not answer, and what to do."""
    why = [f"broker(s) {ids(agreement.differ)} still show other replicas"] if agreement.differ else []
    why += [str(agreement.failed[b]) for b in sorted(agreement.failed)]
    return (f"The controller finished the reassignment, but after {agreement.elapsed:.1f} s "
            f"the brokers' metadata does not agree yet ({'; '.join(why)}): check it with "
            "reassign-partitions --verify, or raise --timeout.")


def _reporter(session: Session, progress: CopyProgress) -> reassignments.Report:
    """The wait's progress as the bar, its failures as notices."""
    def report(event: reassignments.Copying | reassignments.Retrying) -> None:
        if isinstance(event, reassignments.Retrying):
            session.notify(f"Waiting: {event.error} (retrying)")
        else:
            progress.show(*event)
    return report
