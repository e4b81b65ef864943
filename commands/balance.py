"""balance, drain-broker, undrain-broker, cordon and uncordon: where replicas and leaders live.

`balance` plans from the cluster's load read now (kafka_shell/admin/load.py) with the planner of
kafka_shell/admin/balance.py: goals in Cruise Control's order, each shown before and after, the
moves and their bytes against the lower bound any plan must move. `--save-plan` writes Kafka's
reassignment JSON. `--execute` runs it: reorders first (no data moves), then the moves in a
rolling window (at most --max-moves partitions and --max-bytes-in-flight bytes at once),
throttled with --throttle (removed when the moves end), with progress as reassign-partitions
--blocking shows it (partitions, bytes copied, ETA), then preferred elections. The run is
recorded in the shell's data dir: after Ctrl-C (the moves started go on) `balance --resume`
continues it, also from another session, and `balance --cancel` cancels what still moves and
removes the throttles.
On brokers with several log dirs the log_dirs goal also chooses the dir of each replica a move
brings and moves replicas between the dirs of their broker (AlterReplicaLogDirs, to the broker
holding the replica), after the moves between brokers. --throttle limits those too
(replica.alter.log.dirs.io.max.bytes.per.second on the brokers whose replicas move between
dirs, as reassign-partitions --replica-alter-log-dirs-throttle sets it).

`drain-broker N` takes leadership off a broker (its partitions get another first replica, then
a preferred election), with --replicas every replica too (through balance's executor; each
replica arriving on a broker with several log dirs is given the dir with the most room, as the
log_dirs goal places them, so a drain unbalances no dir), and cordons it where the cluster can
(KIP-1066, Kafka 4.3+) so that nothing new lands on it.

`undrain-broker N` uncordons it and gives back the leadership it had. `cordon` and `uncordon`
set a broker's (or some log dirs') cordon alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kafka_shell.admin import balance, balance_run, configs, cordons, load, runs
from kafka_shell.admin.balance import GOALS
from kafka_shell.admin.log_dirs import ReplicaKey
from kafka_shell.base.errors import ShellError, UsageError
from kafka_shell.base.files import FileExists
from kafka_shell.declarations import failure_lines
from kafka_shell.declarations.option_types import (broker_id, byte_size, choice_list, duration, percent, positive_int,
                                                   rate)
from kafka_shell.declarations.progress import CopyProgress
from kafka_shell.declarations.reassignment_files import as_json, read_plan, write_file
from kafka_shell.declarations.reassignment_lines import (cleared_lines, dir_moves_lines, ids, log_dir_throttled_lines,
                                                         sent_back_lines, throttled_lines)
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

Key = tuple[str, int]
INTERRUPTED = 130


def _name(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


def human(n: float) -> str:
    """Bytes as the tables show them (binary units)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# -- balance ----------------------------------------------------------------------------------------

RUN_ACTIONS = ("--execute", "--resume", "--cancel")
PLAN_ONLY = ("--goals", "--topic", "--disk-threshold", "--sample", "--snapshots", "--leaders-only", "--save-plan")


@command("balance",
         Option("--execute", flag=True, help="Run the plan (without it the plan is only shown)."),
         Option("--resume", flag=True, help="Go on with the balance run recorded for this cluster."),
         Option("--cancel", flag=True, help="Cancel the moves of the recorded run and remove its throttles."),
         Option("--goals", type=choice_list(GOALS, "goals"), metavar="GOAL,GOAL",
                help=f"Plan for these goals only (default all: {','.join(GOALS)})."),
         Option("--topic", repeatable=True, metavar="NAME", completer="topic",
                help="Balance only these topics (globs allowed); only their replicas are counted."),
         Option("--disk-threshold", type=percent, metavar="PCT",
                help="How far from the mean a broker's bytes may be (default 10%)."),
         Option("--sample", type=duration, metavar="INTERVAL",
                help="Read each partition's log end twice this far apart (e.g. 30s) for its bytes in."),
         Option("--snapshots", metavar="DIR", completer="path",
                help="Bytes in per partition from the two latest snapshots of this cluster in DIR."),
         Option("--leaders-only", flag=True, help="Move no replica: balance leadership (reorder, preferred elections)."),
         Option("--save-plan", metavar="FILE", completer="path",
                help="Save the plan as Kafka's reassignment JSON (a new file)."),
         Option("--plan", metavar="FILE", completer="path",
                help="With --execute: run this saved plan (what is already in place is skipped)."),
         Option("--max-moves", type=positive_int, metavar="N",
                help=f"Partitions moving at once (default {balance_run.DEFAULT_MAX_MOVES})."),
         Option("--max-bytes-in-flight", type=byte_size, metavar="SIZE",
                help="Bytes being copied at once, e.g. 10GB (default: no limit)."),
         Option("--throttle", type=rate, metavar="BYTES/S",
                help="Throttle while moving, between brokers and between the log dirs of a broker; removed after."),
         Option("--yes", flag=True, help="In the REPL: do not ask before --execute."),
         mutates=True,
         confirm=Confirm(applies=lambda args: args["execute"], proposed=True, opt_in="--execute"),
         exclusive_groups=(RUN_ACTIONS, ("--sample", "--snapshots"), ("--plan", "--save-plan")),
         help="Plan (default) or --execute moves that balance replicas, leaders and bytes over the brokers.",
         description=("Goals in priority order (a lower goal never undoes a higher one): rack (replicas spread "
                      "over racks), replicas (per broker within one of the mean), leaders (per broker within one "
                      "of the mean; no data moves: reorder and preferred election), disk (bytes per broker "
                      "within --disk-threshold of the mean, or of its share of the disk space), log_dirs (bytes per "
                      "log dir of each broker with several, within --disk-threshold of the dir's share of its broker's "
                      "bytes: replicas move between the dirs of their broker), bytes_in (with "
                      "--sample or --snapshots), topics (no broker crowded with one topic). The plan moves the "
                      "least data it can and states the lower bound any plan must move. Cordoned and drained "
                      "brokers take nothing new. --execute runs it in a rolling window with progress; --throttle "
                      "limits the copies between brokers (Kafka's replication throttles) and between the dirs of a "
                      "broker (replica.alter.log.dirs.io.max.bytes.per.second on the brokers whose replicas move "
                      "between dirs), removed when the moves end or by --cancel; Ctrl-C stops waiting (the moves "
                      "go on): --resume continues, --cancel stops them. Exit codes: 0 done or planned, 1 failed or "
                      "partial (a broker did not describe its log dirs: the plan is shown, --execute refused), 2 bad "
                      "input, 130 stopped waiting."),
         examples=("balance", "balance --goals rack,replicas,leaders --save-plan plan.json",
                   "balance --sample 30s", "balance --leaders-only --execute",
                   "balance --execute --max-moves 20 --throttle 50000000", "balance --resume", "balance --cancel"),
         tables=("goals", "moves", "dir_moves", "status", "goals_now"))
def balance_cmd(session: Session, args: dict) -> Result | Proposal:
    _check_balance_options(args)
    if args["cancel"] or args["resume"]:
        record = runs.load_run(balance_run.run_key(session.conn))
        if args["dry_run"]:
            what = "cancel" if args["cancel"] else "go on with"
            return Result.message(f"Would {what} the recorded run: {record.get('what', 'balance')}, "
                                  f"{len(record.get('targets', {}))} partition(s) (dry run)." if record else
                                  "No balance run is recorded for this cluster (dry run).")
        if args["cancel"]:
            return cancel_run(session)
        if record is None:
            raise ShellError("No balance run is recorded for this cluster: nothing to resume (plan one with balance)")
        return execute_run(session, record, resumed=True)
    if args["plan"] is not None:
        return _saved_plan(session, args)
    found = _read_load(session, args)
    plan = _plan(found.layout, _options(args))
    result = plan_result(plan, found, args)
    if args["save_plan"] is not None and _has_work(plan):
        path = Path(args["save_plan"]).expanduser()
        try:
            write_file(path, as_json(_plan_assignment(plan, found), _plan_dirs(plan)))
        except FileExists as exc:
            raise UsageError(str(exc)) from None
        result.messages.append(f"Saved the plan to {path} (Kafka's reassignment JSON): run it with "
                               f"balance --execute --plan {path}")
    if not args["execute"] or args["dry_run"] or not _has_work(plan):
        if args["execute"] and args["dry_run"]:
            result.messages.append("Dry run: nothing was changed.")
        return result
    if found.missing:
        raise ShellError(f"Not executing: broker(s) {ids(sorted(found.missing))} did not describe their log dirs, so "
                         "the plan may miss a cordon or a size; try again when they answer")
    record = _record_of(plan, args, "balance", _options(args).goals)
    return Proposal(question=_question(plan), refusal="balance --execute changes the cluster",
                    apply=lambda: _merge(result, execute_run(session, record, resumed=False)))


def _has_work(plan: balance.Plan) -> bool:
    return bool(plan.changes or plan.dir_moves)


def _plan_dirs(plan: balance.Plan) -> dict[ReplicaKey, str]:
    """The log dir the plan sets for each replica (the log_dirs goal)."""
    return {(m.key[0], m.key[1], m.broker): m.after for m in plan.dir_moves}


def _plan_assignment(plan: balance.Plan, found: load.Load) -> dict[Key, list[int]]:
    """The replicas of each partition the plan changes, or whose replicas it moves between log
    dirs (those keep their replicas)."""
    now = dict(zip(found.keys, found.layout.replicas))
    return {**{m.key: list(now[m.key]) for m in plan.dir_moves}, **plan.proposed()}


def _check_balance_options(args: dict) -> None:
    action = next((a for a in RUN_ACTIONS if args[a.lstrip("-")]), None)
    if action in ("--resume", "--cancel"):
        given = [o for o in (*PLAN_ONLY, "--plan", "--max-moves", "--max-bytes-in-flight", "--throttle")
                 if args[o.lstrip("-").replace("-", "_")] not in (None, False, [])]
        if given:
            raise UsageError(f'Option "{given[0]}" can\'t be used with {action}: the recorded run keeps its settings')
    if args["plan"] is not None and not args["execute"]:
        raise UsageError("--plan runs a saved plan: add --execute (or leave --plan out to make a new plan)")
    for option in ("--plan", "--snapshots", "--save-plan"):
        if args[option.lstrip("-").replace("-", "_")] == "":
            raise UsageError(f"{option} needs a path (it is empty)")
    if args["plan"] is not None:
        given = [o for o in PLAN_ONLY if args[o.lstrip("-").replace("-", "_")] not in (None, False, [])]
        if given:
            raise UsageError(f'Option "{given[0]}" plans: it can\'t be used with --plan, which runs a saved plan')
    if args["leaders_only"] and args["goals"]:
        raise UsageError("--leaders-only plans the leaders goal alone: leave --goals out")


def _options(args: dict) -> balance.Options:
    goals = tuple(args["goals"]) if args["goals"] else balance.GOALS
    return balance.Options(goals=goals, disk_threshold=args["disk_threshold"] if args["disk_threshold"] is not None
                           else balance.Options.disk_threshold, leaders_only=args["leaders_only"])


def _read_load(session: Session, args: dict) -> load.Load:
    found = load.read(session.conn, args["topic"] or None)
    if args["topic"] and not found.keys:
        raise UsageError(f"No topic matches {', '.join(args['topic'])} (check the names with list-topics)")
    sizes = dict(zip(found.keys, found.layout.sizes))
    if args["sample"]:
        session.notify(f"Sampling log end offsets for {args['sample']:g} s ...")
        sampled = load.sample_rates(session.conn, found.snapshot, found.keys, sizes, args["sample"])
        found.layout.rates = [sampled.rates.get(k, 0.0) for k in found.keys]
        for line in failure_lines.partition_lines(sampled.unread)[:5]:
            session.notify(f"No bytes-in rate (counted as 0): {line}")
    elif args["snapshots"] is not None:
        from kafka_shell.pipeline import snapshot
        try:
            rates = snapshot.partition_rates(Path(args["snapshots"]).expanduser(), found.snapshot.cluster_id or "")
        except (ValueError, OSError) as exc:
            raise UsageError(f"--snapshots {args['snapshots']}: {exc}") from None
        found.layout.rates = [rates.get(k, 0.0) for k in found.keys]
    return found


def _plan(layout: balance.Layout, options: balance.Options) -> balance.Plan:
    try:
        return balance.plan(layout, options)
    except balance.BalanceError as exc:   # drain-broker --replicas of the last broker that may hold them
        raise ShellError(failure_lines.balance_error_line(exc)) from None


def goals_table(goals: list[balance.GoalStatus], name: str = "goals", now: bool = False) -> Table:
    """Each goal in priority order: its measure (skews in % of the mean, else the partitions or
    topics that break it) before and after the plan (or `now` only), its target and whether it
    is met; a goal that cannot be judged says why, its values empty."""
    rows = []
    for priority, g in enumerate(goals, 1):
        if not g.applies:
            why = NOT_JUDGED.get(g.goal, "not asked for (--goals)")
            rows.append([priority, g.goal, g.title, why, None, g.target, None] if now else
                        [priority, g.goal, g.title, why, None, None, g.target, None, None])
            continue
        spread = g.goal in balance.SPREAD_GOALS
        before, after = (round(g.before * 100, 1), round(g.after * 100, 1)) if spread else (int(g.before), int(g.after))
        measure = "skew (% of the mean)" if spread else g.measure
        rows.append([priority, g.goal, g.title, measure, before, g.target, g.met_before] if now else
                    [priority, g.goal, g.title, measure, before, after, g.target, g.met_before, g.met_after])
    columns = ["Priority", "Goal", "Title", "Measure", "Now", "Target", "Met"] if now else \
        ["Priority", "Goal", "Title", "Measure", "Before", "After", "Target", "MetBefore", "MetAfter"]
    return Table(columns, rows, name=name)


NOT_JUDGED = {balance.RACK: "not judged: the brokers have no racks (or one)",
              balance.LOG_DIRS: "not judged: no broker has two or more log dirs (that it described)",
              balance.BYTES_IN: "not judged: no rates (--sample 30s or --snapshots DIR)"}


def moves_table(changes: list[balance.Change]) -> Table:
    rows = [[c.key[0], c.key[1], "reorder" if c.reorder_only else "move", list(c.before), list(c.after),
             c.adding, c.removing, c.bytes] for c in changes]
    return Table(["Topic", "Partition", "Kind", "Replicas", "Target", "Adding", "Removing", "Bytes"], rows,
                 name="moves", kinds={"Bytes": "bytes"})


def missing_lines(found: load.Load) -> list[str]:
    """What the plan was made without: each broker that did not describe its log dirs."""
    return [f"{failure_lines.unread_log_dirs_line(b, e)}: its replicas' sizes come from the others, and whether it "
            "is cordoned is not known." for b, e in sorted(found.missing.items())]


def dir_moves_table(moves: list[balance.DirMove]) -> Table:
    rows = [[m.key[0], m.key[1], m.broker, "move" if m.before is not None else "place", m.before, m.after, m.bytes]
            for m in moves]
    return Table(["Topic", "Partition", "Broker", "Kind", "LogDir", "Target", "Bytes"], rows, name="dir_moves",
                 kinds={"Bytes": "bytes"})


def plan_result(plan: balance.Plan, found: load.Load, args: dict) -> Result:
    summary = (f"Plan: {plan.moved_replicas} replica move(s), {human(plan.moved_bytes)} to copy (the lower bound: "
               f"{plan.bound_replicas} replica(s), {human(plan.bound_bytes)}); {plan.leader_changes} partition(s) "
               "change leader by preferred election.")
    messages = [summary if _has_work(plan) else "Nothing to change: no move helps a goal."]
    within = [m for m in plan.dir_moves if m.before is not None]
    if plan.dir_moves:
        messages.append(f"Log dirs: {len(within)} replica(s) move between the dirs of their broker "
                        f"({human(plan.moved_dir_bytes)} copied on the broker), "
                        f"{len(plan.dir_moves) - len(within)} arriving replica(s) get their dir.")
    if plan.moved_replicas < plan.bound_replicas:
        messages.append("The bound counts what the goals ask each broker to shed; a higher goal (racks, cordoned "
                        "or drained brokers) keeps some of it where it is.")
    messages += map(failure_lines.balance_note, plan.notes)
    messages += missing_lines(found)
    if _has_work(plan) and not args["execute"]:
        messages.append("Run it with: balance --execute" + (" --leaders-only" if args["leaders_only"] else "")
                        + "  (or save it with --save-plan FILE)")
    return Result(tables=[goals_table(plan.goals), moves_table(plan.changes), dir_moves_table(plan.dir_moves)],
                  messages=messages, exit_code=1 if found.missing else 0)


def _question(plan: balance.Plan) -> str:
    within = sum(1 for m in plan.dir_moves if m.before is not None)
    dirs = f", move {within} replica(s) between log dirs ({human(plan.moved_dir_bytes)})" if within else ""
    return (f"Move {plan.moved_replicas} replica(s) ({human(plan.moved_bytes)}){dirs} and change the leader of "
            f"{plan.leader_changes} partition(s)?")


def _record_of(plan: balance.Plan, args: dict, what: str, goals: tuple[str, ...] = ()) -> dict:
    sizes = {c.key: c.size for c in plan.changes}
    record = runs.run_record(plan.proposed(), plan.current(), sizes, args.get("throttle"),
                             args.get("max_moves") or balance_run.DEFAULT_MAX_MOVES, args.get("max_bytes_in_flight"), what)
    if goals:   # shown as they stand once the run ends
        record.update(goals=list(goals), topics=args.get("topic") or [])
    if plan.dir_moves:
        record["dirs"] = [[*k, d] for k, d in sorted(_plan_dirs(plan).items())]
    return record


def _merge(first: Result, second: Result) -> Result:
    return Result(tables=[*first.tables, *second.tables], messages=[*first.messages, *second.messages],
                  exit_code=second.exit_code or first.exit_code)


def _saved_plan(session: Session, args: dict) -> Result | Proposal:
    """--execute --plan FILE: a saved plan, against the cluster now (what is in place is skipped)."""
    targets, dirs = read_plan(args["plan"])
    found = load.read(session.conn, sorted({t for t, _ in targets}))
    now = dict(zip(found.keys, found.layout.replicas))
    sizes = dict(zip(found.keys, found.layout.sizes))
    missing = [k for k in targets if k not in now]
    if missing:
        raise UsageError(f"{args['plan']}: partition {_name(missing[0])} does not exist: fix the file (see describe-topic)")
    changes = [balance.Change(k, tuple(now[k]), tuple(r), sizes.get(k, 0)) for k, r in sorted(targets.items()) if now[k] != r]
    where = dict(zip(found.keys, found.layout.dirs or []))
    dir_moves = [balance.DirMove((t, p), b, where.get((t, p), {}).get(b), d, sizes.get((t, p), 0))
                 for (t, p, b), d in sorted(dirs.items()) if where.get((t, p), {}).get(b) != d]
    messages = [f"{len(targets) - len(changes)} of {len(targets)} partition(s) of the plan are in place already."]
    if dirs:
        messages.append(f"{len(dirs) - len(dir_moves)} of {len(dirs)} replica(s) are in the log dir the plan names already.")
    tables = [moves_table(changes), dir_moves_table(dir_moves)]
    if not (changes or dir_moves) or args["dry_run"]:
        return Result(tables=tables, messages=messages + (["Dry run: nothing was changed."] if args["dry_run"] else []))
    record = runs.run_record({c.key: list(c.after) for c in changes}, {c.key: list(c.before) for c in changes},
                             {c.key: c.size for c in changes}, args["throttle"], args["max_moves"] or balance_run.DEFAULT_MAX_MOVES,
                             args["max_bytes_in_flight"], f"balance --plan {args['plan']}")
    record["dirs"] = [[m.key[0], m.key[1], m.broker, m.after] for m in dir_moves]
    moved = sum(c.bytes for c in changes) + sum(m.bytes for m in dir_moves)
    return Proposal(question=f"Run the {len(changes) + len(dir_moves)} change(s) of {args['plan']} ({human(moved)} to copy)?",
                    refusal="balance --execute changes the cluster",
                    apply=lambda: _merge(Result(tables=tables, messages=messages), execute_run(session, record, False)))


# -- the executor's lines -----------------------------------------------------------------------------


def _reporter(session: Session, resumed: bool) -> balance_run.Report:
    """What a run tells as it goes, as lines on stderr (the copy progress as reassign-partitions
    --blocking shows it)."""
    progress: list[CopyProgress] = []

    def report(event: balance_run.Event) -> None:
        if isinstance(event, balance_run.Began):
            session.notify(f"Resuming: {event.in_place} of {event.total} partition(s) in place, {event.moving} moving."
                           if resumed else f"Executing {event.what}: {event.moves} move(s), "
                           f"{event.reorders} reorder(s).")
        elif isinstance(event, balance_run.Throttled):
            for line in throttled_lines(event.record, event.unreachable):
                session.notify(line)
        elif isinstance(event, balance_run.DirsThrottled):
            for line in log_dir_throttled_lines(event.brokers, event.rate, event.unreachable):
                session.notify(line)
        elif isinstance(event, balance_run.MovingDirs):
            session.notify(f"Moving {event.replicas} replica(s) to their log dir ...")
        elif isinstance(event, balance_run.Copying):
            if not progress:
                progress.append(CopyProgress(session.stderr))
            progress[0].show(event.done, event.total, event.copied, event.size)
        elif isinstance(event, balance_run.Copied) and progress:
            progress.pop().done()
    return report


def execute_run(session: Session, record: dict, resumed: bool) -> Result:
    """Run (or go on with) a recorded run (kafka_shell/admin/balance_run.py) and say how it ended."""
    return run_result(balance_run.execute(session.conn, record, _reporter(session, resumed)), resumed)


def run_result(outcome: balance_run.Outcome, resumed: bool) -> Result:
    run = outcome.run
    if outcome.foreign:
        raise ShellError(f"Cannot {'resume' if resumed else 'execute'}: {len(outcome.foreign)} other partition "
                         f"reassignment(s) are in progress ({', '.join(map(_name, outcome.foreign[:5]))}): wait for "
                         "them (reassign-partitions --blocking) or cancel them")
    if outcome.interrupted:
        left = len(run.targets) - len(run.done) - len(run.failed)
        return Result.message(f"Stopped waiting: {len(run.done)} of {len(run.targets)} partition(s) in place, "
                              f"{len(run.moving)} still moving (they go on), {left - len(run.moving)} not started. "
                              "Go on with: balance --resume; stop with: balance --cancel", exit_code=INTERRUPTED)
    messages = cleared_lines(outcome.cleared) if outcome.cleared else []
    messages += _dir_lines(outcome.dir_moves)
    messages += _elected_lines(outcome.elected)
    rows = [[k[0], k[1], "failed" if k in run.failed else "done", run.targets[k],
             _failed_line(k, run.failed[k], run.targets[k]) if k in run.failed else None] for k in sorted(run.targets)]
    tables = [Table(["Topic", "Partition", "Status", "Target", "Error"], rows, name="status")]
    if outcome.goals_now is not None:
        tables.append(goals_table(outcome.goals_now, "goals_now", now=True))
    moved = sum(run.bytes_of(k) for k in run.done)
    messages.append(f"Done: {len(run.done)} of {len(run.targets)} partition(s) at their target, {human(moved)} copied"
                    + (f"; {len(run.failed)} failed." if run.failed else "."))
    messages += [f"{_name(k)}: {_failed_line(k, why, run.targets[k])}" for k, why in sorted(run.failed.items())][:20]
    return Result(tables=tables, messages=messages, exit_code=1 if outcome.failed else 0)


def _failed_line(key: Key, failed: balance_run.Failed, target: list[int]) -> str:
    if failed.refused is not None:
        return failure_lines.reassignment_refusal(key, failed.refused)
    if failed.ended_with is not None:
        return f"ended with replicas {ids(failed.ended_with)} rather than {ids(target)}"
    return "the partition does not exist any more"


def _dir_lines(moves: balance_run.DirMoves | None) -> list[str]:
    if moves is None:
        return []
    if moves.states is None:
        return dir_moves_lines(moves.started)[1]
    wrong = moves.wrong
    lines = [f"Log dirs: {len(moves.states.moves) - len(wrong)} of {len(moves.states.moves)} replica(s) in the log "
             "dir the plan names."]
    return lines + [f"{t}-{p} on broker {b}: {m.state} (in {m.current}, not {m.target})" for (t, p, b), m in wrong][:20]


def _elected_lines(elected: balance_run.Elected | None) -> list[str]:
    if elected is None:
        return []
    lines = [f"Moved the leadership of {n} partition(s) to their new first replica (preferred election)."
             for n in elected.counts]
    return lines + [f"{_name(k)}: preferred election failed: {failure_lines.election_line(o)}"
                    for k, o in elected.failed.items()][:10]


def cancel_run(session: Session) -> Result:
    done = balance_run.cancel(session.conn)
    if done.record is None:
        return Result.message("No balance run is recorded for this cluster: nothing to cancel.",
                              *(cleared_lines(done.cleared) if done.cleared else []))
    messages = []
    if not done.moving:
        messages.append("None of the run's partitions is moving.")
    elif done.cancelled:
        messages.append(f"Cancelled the reassignment of {len(done.cancelled)} partition(s): "
                        f"{', '.join(map(_name, done.cancelled[:10]))}{' ...' if len(done.cancelled) > 10 else ''}.")
    if done.refused:
        return Result.message(*messages, *failure_lines.reassignment_lines(done.refused), exit_code=1)
    if done.sent_back:
        sent, failed = sent_back_lines(*done.sent_back)
        messages += sent
        if failed:
            return Result.message(*messages, *failed, exit_code=1)
    messages += cleared_lines(done.cleared) if done.cleared else []
    messages.append(f"The recorded run ({done.record.get('what', 'balance')}) is forgotten; partitions already moved "
                    "stay.")
    return Result.message(*messages)


# -- drain-broker, undrain-broker -------------------------------------------------------------------


@command("drain-broker",
         Option("broker", type=broker_id, required=True, metavar="ID", completer="broker",
                help="The broker to drain."),
         Option("--replicas", flag=True, help="Move every replica off too (decommissioning)."),
         Option("--no-cordon", flag=True, help="Leave the broker uncordoned (new partitions may land on it)."),
         Option("--max-moves", type=positive_int, metavar="N",
                help=f"With --replicas: partitions moving at once (default {balance_run.DEFAULT_MAX_MOVES})."),
         Option("--max-bytes-in-flight", type=byte_size, metavar="SIZE", help="With --replicas: bytes copied at once."),
         Option("--throttle", type=rate, metavar="BYTES/S", help="With --replicas: replication throttle while moving."),
         Option("--yes", flag=True, help="Do not ask for confirmation."),
         mutates=True, confirm=Confirm(proposed=True, refusal="drain-broker changes the cluster"),
         help="Move leadership (with --replicas every replica) off a broker and cordon it, for maintenance.",
         description=("Each partition the broker leads gets another first replica (the in-sync one that leads "
                      "fewest), then a preferred election moves its leadership; with --replicas every replica "
                      "moves to other brokers (through balance's executor: --resume and --cancel work on it), and "
                      "one that arrives on a broker with several log dirs is made in the dir with the most room "
                      "(balance's log_dirs goal; the replicas the brokers keep stay in their dirs). "
                      "Where the cluster can (KIP-1066, Kafka 4.3+) the broker is then cordoned so that nothing "
                      "new lands on it; health says it is drained. undrain-broker brings it back. Exit codes: "
                      "0 done, 1 failed, 2 bad input, 130 stopped waiting."),
         examples=("drain-broker 3", "drain-broker 3 --replicas --throttle 50000000", "drain-broker 3 --dry-run"),
         tables=("moves", "dir_moves", "status"))
def drain_broker(session: Session, args: dict) -> Result | Proposal:
    conn = session.conn
    b = args["broker"]
    found = load.read(conn, None, drained={b} if args["replicas"] else set(), no_leaders={b})
    if b not in found.snapshot.brokers:
        raise UsageError(f"Broker {b} is not live in the cluster (brokers: {ids(sorted(found.snapshot.brokers))})")
    leaders = _plan(found.layout, balance.Options(goals=(balance.LEADERS,), drain_only=True))
    # The log_dirs goal gives each replica that arrives on a broker with several dirs the dir
    # with the most room (the replicas the brokers keep stay in theirs).
    moves = _plan(found.layout, balance.Options(goals=(balance.RACK, balance.LOG_DIRS), place_dirs_only=True)) \
        if args["replicas"] else None
    cordon_why = None if args["no_cordon"] else cordons.support(conn)
    tables = [moves_table((moves or leaders).changes)]
    summary = [f"Broker {b} leads {sum(1 for x in found.layout.leaders or [] if x == b)} partition(s): "
               f"{len(leaders.changes)} get another first replica, then a preferred election."]
    if moves is not None:
        summary.append(f"With --replicas: {moves.moved_replicas} replica(s) move off it ({human(moves.moved_bytes)}).")
        tables.append(dir_moves_table(moves.dir_moves))
        if moves.dir_moves:
            summary.append(f"{len(moves.dir_moves)} of them arrive on brokers with several log dirs: each gets the "
                           "dir with the most room, named to its broker before the move (it is made there).")
    summary += map(failure_lines.balance_note, (moves or leaders).notes)
    if args["no_cordon"]:
        summary.append("It stays uncordoned (--no-cordon).")
    elif cordon_why:
        summary.append(f"It cannot be cordoned: {cordon_why}; new partitions may land on it.")
    else:
        summary.append("Then it is cordoned (cordoned.log.dirs=*): nothing new lands on it.")
    if args["dry_run"]:
        return Result(tables=tables, messages=[*summary, *missing_lines(found), "Dry run: nothing was changed."],
                      exit_code=1 if found.missing else 0)
    if found.missing:
        raise ShellError(f"Not draining: broker(s) {ids(sorted(found.missing))} did not describe their log dirs; "
                         "try again when they answer")

    def apply() -> Result:
        result = _drain(session, args, leaders, moves, cordon_why is None and not args["no_cordon"])
        if cordon_why:
            result.messages.append(f"Broker {b} is not cordoned: {cordon_why}; new partitions may land on it.")
        return result
    return Proposal(question=f"Drain broker {b}{' of every replica' if moves else ''}?",
                    refusal=f"drain-broker {b} changes the cluster", apply=apply)


def _drain(session: Session, args: dict, leaders: balance.Plan, moves: balance.Plan | None, cordon: bool) -> Result:
    b = args["broker"]
    record = _record_of(moves, args, f"drain-broker {b} --replicas") if moves is not None and moves.changes else None
    done = balance_run.drain(session.conn, b, leaders, moves is not None, record, cordon,
                             _reporter(session, False))
    messages: list[str] = []
    result = Result()
    if done.reordered:
        result = run_result(done.reordered, False)
        messages += result.messages
    if done.cordoned is not None and done.cordoned_first:
        messages.append(_cordoned_line(b, done.cordoned))
    if done.moved:
        moved = run_result(done.moved, False)
        messages += moved.messages
        result = Result(tables=moved.tables, exit_code=moved.exit_code or result.exit_code)
    if done.cordoned is not None and not done.cordoned_first:
        messages.append(_cordoned_line(b, done.cordoned))
    if result.exit_code == 0:
        messages.append(f"Broker {b} is drained: undrain-broker {b} brings it back.")
    return Result(tables=result.tables, messages=messages, exit_code=result.exit_code)


def _cordoned_line(b: int, now: bool) -> str:
    return (f"Cordoned broker {b} (cordoned.log.dirs=*): no new replica lands on it." if now else
            f"Broker {b} is cordoned already.")


@command("undrain-broker",
         Option("broker", type=broker_id, required=True, metavar="ID", completer="broker",
                help="The broker to bring back."),
         Option("--yes", flag=True, help="Do not ask for confirmation."),
         mutates=True, confirm=Confirm(proposed=True, refusal="undrain-broker changes the cluster"),
         help="Uncordon a drained broker and give back the leadership it had.",
         description=("Its cordon goes back to what it was before drain-broker (none, usually), and the "
                      "partitions drain-broker reordered get their order back where their replicas are still "
                      "the same, then preferred elections. Replicas moved off it stay where they are: balance "
                      "moves some back. Without a drain recorded by this shell, it uncordons the broker and "
                      "balances leadership over every broker (balance --leaders-only)."),
         examples=("undrain-broker 3", "undrain-broker 3 --dry-run"), tables=("moves", "status"))
def undrain_broker(session: Session, args: dict) -> Result | Proposal:
    conn = session.conn
    b = args["broker"]
    owner = balance_run.run_key(session.conn)
    drained = runs.load_drains(owner).get(b)
    found = load.read(conn, None)
    if b not in found.snapshot.brokers:
        raise UsageError(f"Broker {b} is not live in the cluster (brokers: {ids(sorted(found.snapshot.brokers))}): "
                         "start it first")
    now = dict(zip(found.keys, found.layout.replicas))
    if drained is not None:
        targets = {runs.key_of(k): list(r) for k, r in drained.get("orders", {}).items()}
        targets = {k: r for k, r in targets.items() if k in now and set(now[k]) == set(r) and now[k] != r}
        changes = [balance.Change(k, tuple(now[k]), tuple(r), 0) for k, r in sorted(targets.items())]
    else:
        changes = _plan(found.layout, balance.Options(leaders_only=True)).changes
    can_cordon = cordons.support(conn) is None
    cordon_now = cordons.value(conn, b) if can_cordon else []
    cordon_before = [d for d in (drained or {}).get("cordon") or [] if d != cordons.ALL]
    messages = [f"{len(changes)} partition(s) get back the order they had (then preferred elections)."]
    if cordon_now != cordon_before and can_cordon:
        messages.append(f"Broker {b} is uncordoned" + (f" (back to cordoned.log.dirs={','.join(cordon_before)})."
                                                       if cordon_before else "."))
    if args["dry_run"]:
        return Result(tables=[moves_table(changes)],
                      messages=[*messages, *missing_lines(found), "Dry run: nothing was changed."],
                      exit_code=1 if found.missing else 0)

    def apply() -> Result:
        out: list[str] = []
        if can_cordon and cordon_now != cordon_before:
            cordons.set_value(conn, b, cordon_before, False)
            out.append(f"Uncordoned broker {b}" + (f" (back to cordoned.log.dirs={','.join(cordon_before)})."
                                                   if cordon_before else "."))
        result = Result()
        if changes:   # after the cordon goes: Kafka refuses a reorder naming a cordoned broker
            record = runs.run_record({c.key: list(c.after) for c in changes}, {c.key: list(c.before) for c in changes},
                                     {}, None, balance_run.REQUEST_CHUNK, None, f"undrain-broker {b}")
            result = execute_run(session, record, resumed=False)
            out += result.messages
        runs.save_drain(owner, b, None)
        out.append(f"Broker {b} is back; balance moves replicas onto it if it holds fewer than the others.")
        return Result(tables=result.tables, messages=out, exit_code=result.exit_code)
    return Proposal(question=f"Bring broker {b} back (uncordon, {len(changes)} leader change(s))?",
                    refusal=f"undrain-broker {b} changes the cluster", apply=apply)


# -- cordon, uncordon -----------------------------------------------------------------------------


def _cordon_command(cordon: bool):

    def handler(session: Session, args: dict) -> Result:
        conn = session.conn
        cordons.require(conn)
        brokers = args["broker"]
        dirs = args["log_dir"] or []
        if dirs and len(brokers) != 1:
            raise UsageError("--log-dir names the dirs of one broker: give one --broker with it")
        state, failed = cordons.state(conn, brokers)
        for b in brokers:
            if b in failed:
                raise ShellError(failure_lines.log_dir_lines({b: failed[b]})[0])
        messages: list[str] = []
        rows = []
        for b in brokers:
            every = list(state[b].dirs) if b in state else []
            unknown = [d for d in dirs if d not in every]
            if unknown:
                raise UsageError(f"Broker {b} has no log dir {unknown[0]} (its log dirs: {', '.join(every)})")
            current = cordons.value(conn, b)
            new = cordons.new_value(current, dirs, every, cordon)
            if new is None:
                messages.append(f"Broker {b}: {'already' if cordon else 'not'} cordoned"
                                + (f" ({', '.join(dirs)})" if dirs else "") + ": nothing to change.")
                rows.append([b, ",".join(current) or None, ",".join(current) or None])
                continue
            changed = cordons.set_value(conn, b, new, args["dry_run"])
            messages += failure_lines.config_change_lines(changed, configs.BROKERS, args["dry_run"])[0]
            rows.append([b, ",".join(current) or None, ",".join(new) or None])
        if not args["dry_run"]:
            messages.append("The brokers tell the controller at their next heartbeat (a second or two); "
                            "describe-log-dirs shows each dir's state.")
        # The broker's cordoned.log.dirs before and after ("*": Kafka's word for all of them).
        return Result(tables=[Table(["Broker", "CordonedBefore", "Cordoned"], rows, name="cordons",
                                    kinds={"CordonedBefore": "kept", "Cordoned": "kept"})], messages=messages)
    return handler


_CORDON_OPTIONS = (
    Option("--broker", type=broker_id, repeatable=True, required=True, metavar="ID", completer="broker",
           help="A broker (repeatable)."),
    Option("--log-dir", repeatable=True, metavar="PATH", help="Only this log dir of the broker (repeatable)."),
)
command("cordon", *_CORDON_OPTIONS, mutates=True,
        help="Cordon brokers or log dirs (KIP-1066, Kafka 4.3+): no new replica lands on them.",
        description=("Sets the broker's cordoned.log.dirs (the dirs named, or * for the whole broker). The "
                     "broker puts no new replica in a cordoned dir; once all its dirs are cordoned the controller "
                     "places no new partition on it and refuses reassignments that name it (reorders included). "
                     "Replicas there stay and serve. uncordon takes it back."),
        examples=("cordon --broker 3", "cordon --broker 3 --log-dir /data/kafka-2", "cordon --broker 3 --dry-run"), tables=("cordons",))(
    _cordon_command(True))
command("uncordon", *_CORDON_OPTIONS, mutates=True,
        help="Uncordon brokers or log dirs (KIP-1066): new replicas may land on them again.",
        description="Removes the dirs named (or all of them) from the broker's cordoned.log.dirs.",
        examples=("uncordon --broker 3", "uncordon --broker 3 --log-dir /data/kafka-2"), tables=("cordons",))(_cordon_command(False))

