"""Running a recorded balance (or drain) run on the cluster: reorders first (no data moves), then
the moves in a rolling window (at most max_moves partitions and max_bytes bytes at once) under
the run's throttle, then the replicas moved between the log dirs of their broker, the throttles
removed and preferred elections; cancelling what of a run still moves; draining a broker with
runs and its cordon.

What happened comes back as values (`Outcome`, `Cancelled`, `Drained`, with AdminErrors for what
was refused); progress on the way is told to a `report` callback as events (`Began`,
`Throttled`, `Copying`...), which the command turns into lines. The run's record (admin/runs.py)
is saved while it runs and forgotten once it ends, so that `balance --resume` finds it after Ctrl-C.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.admin import balance, cluster, cordons, elections, load, log_dirs, reassignments, runs, throttles, topics
from kafka_shell.admin.log_dirs import ReplicaKey
from kafka_shell.admin.reassignments import Copying
from kafka_shell.base.answers import AdminError

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

Key = tuple[str, int]
POLL_S = 1.0
ELECTION_TIMEOUT_MS = 30000
REQUEST_CHUNK = 1000          # partitions per AlterPartitionReassignments request
DEFAULT_MAX_MOVES = 50


def run_key(conn: ConnectionManager) -> str:
    """Which cluster a recorded run or drain belongs to: its id, read now (any session, whatever
    bootstrap list it was given, finds the same record)."""
    return cluster.cluster_id(conn) or conn.bootstrap


# -- what a run tells as it goes -----------------------------------------------------------------


class Began(NamedTuple):
    """The run (`what` it is) starts or resumes: partitions in place and moving already, moves and
    reorders to start."""
    what: str
    total: int
    in_place: int
    moving: int
    moves: int
    reorders: int


class Throttled(NamedTuple):
    """The replication throttle was set (`throttles.set_replication`: the brokers not reachable)."""
    record: dict
    unreachable: list[int]


class DirsThrottled(NamedTuple):
    """The throttle between log dirs was set on `brokers` (`unreachable`: not set)."""
    brokers: list[int]
    rate: int
    unreachable: list[int]


class Copied(NamedTuple):
    """The moves between brokers have ended."""


class MovingDirs(NamedTuple):
    """`replicas` replicas are moving to their log dir."""
    replicas: int


Event = Began | Throttled | DirsThrottled | Copying | Copied | MovingDirs
Report = Callable[[Event], None]


# -- a run ---------------------------------------------------------------------------------------


class Failed(NamedTuple):
    """Why a partition of the run is not at its target: the controller refused to move it
    (`refused`), it ended with other replicas (`ended_with`), or it does not exist any more (neither)."""
    refused: AdminError | None = None
    ended_with: list[int] | None = None


class DirMoves(NamedTuple):
    """The moves between log dirs: how they started; when they all started, each one's state at the end."""
    started: log_dirs.Started
    states: log_dirs.MoveStates | None

    @property
    def wrong(self) -> list[tuple[ReplicaKey, log_dirs.MoveState]]:
        return [(k, m) for k, m in self.states.moves.items() if m.state != log_dirs.DONE] if self.states else []

    @property
    def failed(self) -> bool:
        return self.states is None or bool(self.wrong)


class Elected(NamedTuple):
    """The preferred elections after the moves: how many moved their leader at each attempt
    (those that did), and the elections that failed in the end."""
    counts: list[int]
    failed: dict[Key, elections.Election]


class Run:
    """One execution of a recorded run: what is done, moving, waiting and failed."""

    def __init__(self, record: dict):
        self.record = record
        self.targets = runs.run_targets(record)
        self.original = runs.run_targets(record, "original")
        self.sizes = {runs.key_of(k): int(v) for k, v in record.get("sizes", {}).items()}
        self.done: set[Key] = set()
        self.failed: dict[Key, Failed] = {}
        self.moving: set[Key] = set()
        self.throttled = False
        # The log_dirs goal's: each replica's dir on its broker, set once the replicas are placed.
        self.dirs: dict[ReplicaKey, str] = {(t, p, b): d for t, p, b, d in record.get("dirs", [])}

    def bytes_of(self, key: Key) -> int:
        adding = [b for b in self.targets[key] if b not in self.original.get(key, [])]
        return self.sizes.get(key, 0) * len(adding)


class Outcome(NamedTuple):
    """How a run ended. `foreign`: other reassignments were in progress, so it did not start.
    `interrupted`: Ctrl-C stopped the waiting (the moves started go on; the record stays).
    Else the throttles removed, the log dir moves, the elections, and (a balance run) each goal
    as the cluster stands now."""
    run: Run
    foreign: list[Key] = []
    interrupted: bool = False
    cleared: throttles.Cleared | None = None
    dir_moves: DirMoves | None = None
    elected: Elected | None = None
    goals_now: list[balance.GoalStatus] | None = None

    @property
    def failed(self) -> bool:
        return bool(self.run.failed) or bool(self.dir_moves and self.dir_moves.failed)


def execute(conn: ConnectionManager, record: dict, report: Report) -> Outcome:
    """Run (or go on with) a recorded run until every partition is at its target, a refusal or
    Ctrl-C; then remove the throttles and elect the preferred leaders."""
    owner = run_key(conn)
    run = Run(record)
    ongoing = reassignments.ongoing(conn)
    foreign = sorted(k for k in ongoing if k not in run.targets)
    if foreign:
        return Outcome(run, foreign=foreign)
    runs.save_run(owner, record)
    snap = topics.read_keys(conn, run.targets)
    now = reassignments.current_assignment(snap.topics, run.targets)
    for key, target in run.targets.items():
        if key not in now:
            run.failed[key] = Failed()
        elif now[key] == target:
            run.done.add(key)
        elif key in ongoing:
            run.moving.add(key)
    waiting = [k for k in run.targets if k not in run.done and k not in run.moving and k not in run.failed]
    reorders = [k for k in waiting if set(now[k]) == set(run.targets[k])]
    moves = [k for k in waiting if k not in reorders]
    report(Began(record.get("what", "the plan"), len(run.targets), len(run.done), len(run.moving), len(moves), len(reorders)))
    _prefer_dirs(conn, run)
    _start(conn, run, reorders, now, report)
    run.done.update(k for k in reorders if k not in run.failed)
    try:
        _roll(conn, run, moves, now, report)
        dir_moves = _move_dirs(conn, run, report)
    except KeyboardInterrupt:
        return Outcome(run, interrupted=True)
    cleared = throttles.clear(conn, False, {})
    elected = _elect(conn, run)
    runs.save_run(owner, None)
    goals_now = None
    if record.get("goals"):   # a balance run: each goal as the cluster stands now
        found = load.read(conn, record.get("topics") or None)
        try:
            goals_now = balance.measure(found.layout, balance.Options(goals=tuple(record["goals"])))
        except balance.BalanceError:   # a run record edited by hand (a goal unknown): the moves are done all the same
            goals_now = None
    return Outcome(run, cleared=cleared, dir_moves=dir_moves, elected=elected, goals_now=goals_now)


def _prefer_dirs(conn: ConnectionManager, run: Run) -> None:
    """Before the moves: tell each broker the dir of the replicas they bring it. It answers
    REPLICA_NOT_AVAILABLE and keeps the dir for when the replica arrives (Kafka's preferred log
    dir), so the replica is made there and not copied once more; `_move_dirs` checks it after."""
    arriving = {k: d for k, d in run.dirs.items() if k[2] not in run.original.get((k[0], k[1]), [k[2]])}
    if arriving:
        log_dirs.alter(conn, arriving)


def _move_dirs(conn: ConnectionManager, run: Run, report: Report) -> DirMoves | None:
    """Once the replicas are on their brokers: move each to its dir (AlterReplicaLogDirs, to the
    broker that holds it) and wait until none is still copying."""
    if not run.dirs:
        return None
    if run.record.get("throttle"):   # on the brokers whose replicas copy between their dirs
        states = log_dirs.move_states(conn, run.dirs)
        copying = sorted({k[2] for k, m in states.moves.items() if m.state != log_dirs.DONE})
        if copying:
            limit = run.record["throttle"]
            report(DirsThrottled(copying, limit, throttles.set_log_dirs(conn, copying, limit)))
    started = log_dirs.start_moves(conn, run.dirs)
    if started.refused or started.waiting:
        return DirMoves(started, None)
    report(MovingDirs(len(run.dirs)))
    return DirMoves(started, log_dirs.wait_for_moves(conn, run.dirs, POLL_S))


def _start(conn: ConnectionManager, run: Run, keys: list[Key], now: dict[Key, list[int]], report: Report) -> list[Key]:
    """Start the reassignment of `keys` (throttled when the run asks); the ones started."""
    if not keys:
        return []
    if run.record.get("throttle"):
        record = throttles.needed({k: now[k] for k in keys}, {k: run.targets[k] for k in keys}, run.record["throttle"])
        if record["partitions"]:
            unreachable = throttles.set_replication(conn, record)
            if not run.throttled:   # later batches join the same throttles: told once
                report(Throttled(record, unreachable))
            run.throttled = True
    started = []
    for i in range(0, len(keys), REQUEST_CHUNK):
        chunk = keys[i:i + REQUEST_CHUNK]
        refused = reassignments.alter(conn, {k: run.targets[k] for k in chunk}).errors
        run.failed.update({k: Failed(refused=e) for k, e in refused.items()})
        started += [k for k in chunk if k not in refused]
    return started


def _roll(conn: ConnectionManager, run: Run, queue: list[Key], now: dict[Key, list[int]], report: Report) -> None:
    """Keep at most max_moves partitions (and max_bytes bytes) moving until none is left."""
    max_moves = int(run.record.get("max_moves") or DEFAULT_MAX_MOVES)
    max_bytes = run.record.get("max_bytes")
    total = [k for k in run.targets if set(run.original.get(k, [])) != set(run.targets[k])]
    total_bytes = sum(run.bytes_of(k) for k in total)
    pending = list(queue)
    while True:
        moving = reassignments.ongoing(conn)
        finished = [k for k in run.moving if k not in moving]
        if finished:
            current = reassignments.current_assignment(topics.read_keys(conn, finished).topics, finished)
            differ = {k for k in finished if current.get(k) != run.targets[k]}
            if differ:   # the broker asked may not have the controller's last change yet
                current.update(reassignments.agreed(conn, differ, conn.deadline(), targets=run.targets).assignment)
            for k in finished:
                if current.get(k) == run.targets[k]:
                    run.done.add(k)
                else:
                    run.failed[k] = Failed(ended_with=current.get(k, []))
            run.moving -= set(finished)
        batch: list[Key] = []
        flight = sum(run.bytes_of(k) for k in run.moving)
        while pending and len(run.moving) + len(batch) < max_moves:
            size = run.bytes_of(pending[0])
            if max_bytes and flight + size > max_bytes and (run.moving or batch):
                break
            batch.append(pending.pop(0))
            flight += size
        if batch:
            run.moving.update(_start(conn, run, batch, now, report))
            moving = reassignments.ongoing(conn)
        if not run.moving and not pending:
            report(Copied())
            return
        in_flight = {k: m for k, m in moving.items() if k in run.moving}
        copied, _ = reassignments.copy_progress(conn, in_flight) if in_flight else (0, 0)
        done_bytes = sum(run.bytes_of(k) for k in run.done if k in total)
        done = sum(1 for k in total if k in run.done or k in run.failed)
        report(Copying(done, len(total), done_bytes + copied, total_bytes))
        time.sleep(POLL_S)


def _elect(conn: ConnectionManager, run: Run) -> Elected:
    """Preferred elections where the leader is not the target's first replica; one retry for
    those that may succeed a moment later."""
    keys = [k for k in run.targets if k in run.done]
    counts: list[int] = []
    failed: dict[Key, elections.Election] = {}
    for attempt in range(2 if keys else 0):
        snap = topics.read_keys(conn, keys)
        wanted = [k for k in keys if k[0] in snap.topics and k[1] < len(snap.topics[k[0]].partitions)
                  and snap.topics[k[0]].partitions[k[1]].leader != run.targets[k][0]]
        if not wanted:
            break
        outcomes = elections.elect(conn, [(t, p, None) for t, p in wanted], elections.PREFERRED, ELECTION_TIMEOUT_MS)
        bad = {k: o for k, o in outcomes.items() if o.state == elections.FAILED}
        if len(wanted) > len(bad):
            counts.append(len(wanted) - len(bad))
        if not bad:
            break
        if attempt or not any(o.retriable for o in bad.values()):
            failed = dict(sorted(bad.items()))
            break
        keys = list(bad)
        time.sleep(1.0)
    return Elected(counts, failed)


# -- cancelling a run ----------------------------------------------------------------------------


class Cancelled(NamedTuple):
    """`cancel`: the run recorded (None: there was none); the partitions whose reassignment was
    cancelled and those the controller would not cancel; which of that run were moving at all;
    the log dir moves sent back (the moves and how they started); the throttles removed. A
    refusal stops it there: the record and the throttles stay."""
    record: dict | None
    moving: list[Key] = []
    cancelled: list[Key] = []
    refused: dict[Key, AdminError] = {}
    sent_back: tuple[dict[ReplicaKey, str], log_dirs.Started] | None = None
    cleared: throttles.Cleared | None = None

    @property
    def failed(self) -> bool:
        return bool(self.refused) or bool(self.sent_back and (self.sent_back[1].refused or self.sent_back[1].waiting))


def cancel(conn: ConnectionManager) -> Cancelled:
    """Cancel what the recorded run still moves (between brokers, and between the log dirs of a
    broker: each replica stays in the dir it is in), remove the throttles and forget the run."""
    owner = run_key(conn)
    record = runs.load_run(owner)
    if record is None:
        return Cancelled(None, cleared=throttles.clear(conn))
    targets = runs.run_targets(record)
    moving = sorted(k for k in reassignments.ongoing(conn) if k in targets)
    refused: dict[Key, AdminError] = dict(reassignments.alter(conn, {k: None for k in moving}).errors) if moving else {}
    out = Cancelled(record, moving, [k for k in moving if k not in refused], refused)
    if out.failed:
        return out
    dirs = {(t, p, b): d for t, p, b, d in record.get("dirs", [])}
    active = log_dirs.move_states(conn, dirs).moving() if dirs else {}
    if active:   # its replicas copying between log dirs stay where they are
        out = out._replace(sent_back=(active, log_dirs.start_moves(conn, active)))
        if out.failed:
            return out
    cleared = throttles.clear(conn)
    runs.save_run(owner, None)
    return out._replace(cleared=cleared)


# -- draining a broker ---------------------------------------------------------------------------


class Drained(NamedTuple):
    """`drain`: the run that gave its partitions another first replica, the run that moved its
    replicas off (--replicas), and whether it was cordoned now (before the moves, or after the
    reorders when no replica moved), or found cordoned already."""
    reordered: Outcome | None = None
    moved: Outcome | None = None
    cordoned: bool | None = None       # None: not cordoned here; False: it was cordoned already
    cordoned_first: bool = False       # before the replicas moved

    @property
    def stopped(self) -> Outcome | None:
        """The run that did not start (other reassignments) or was interrupted, if one was."""
        return next((o for o in (self.reordered, self.moved) if o and (o.foreign or o.interrupted)), None)


def drain(conn: ConnectionManager, broker: int, leaders: balance.Plan, replicas: bool, moves: dict | None,
          cordon: bool, report: Report) -> Drained:
    """Drain `broker`: its partitions get another first replica (`leaders`, a plan), then with
    `moves` (the run record of --replicas, when replicas move) its replicas move off, and with
    `cordon` it is cordoned (after the reorders: Kafka refuses a reorder naming a cordoned broker;
    before the moves, which must bring it nothing new). The drain is recorded first (the orders
    and the cordon before), for undrain-broker."""
    owner = run_key(conn)
    previous = runs.load_drains(owner).get(broker, {})
    orders = dict(previous.get("orders", {}))
    orders.update({runs.key_text(c.key): list(c.before) for c in leaders.changes})
    # The cordon it had before the first drain, which undrain-broker puts back.
    before_cordon = previous["cordon"] if "cordon" in previous else (cordons.value(conn, broker) if cordon else [])
    runs.save_drain(owner, broker, {"orders": orders, "cordon": before_cordon, "replicas": replicas})
    out = Drained()
    if leaders.changes:   # reorders first: Kafka refuses any target naming a cordoned broker
        record = runs.run_record(leaders.proposed(), leaders.current(), {}, None, REQUEST_CHUNK, None,
                                 f"drain-broker {broker}")
        out = out._replace(reordered=execute(conn, record, report))
        if out.stopped:
            return out
    if moves is not None:
        if cordon:
            out = out._replace(cordoned=cordon_broker(conn, broker), cordoned_first=True)
            cordon = False
        out = out._replace(moved=execute(conn, moves, report))
        if out.stopped:
            return out
    if cordon:
        out = out._replace(cordoned=cordon_broker(conn, broker))
    return out


def cordon_broker(conn: ConnectionManager, broker: int) -> bool:
    """Cordon the whole broker (cordoned.log.dirs=*); False when it was already."""
    if cordons.ALL in cordons.value(conn, broker):
        return False
    cordons.set_value(conn, broker, [cordons.ALL], False)
    return True
