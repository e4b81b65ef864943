"""The lines reassign-partitions, balance and drain-broker say of what they did on the cluster, as
Kafka's kafka-reassign-partitions words them where it has words: throttles set and removed
(kafka_shell/admin/throttles.py), and replicas moved between the log dirs of their broker
(kafka_shell/admin/log_dirs.py). The admin layer returns what happened as values; the sentences
are made here, once.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_shell.admin import log_dirs, throttles
from kafka_shell.admin.log_dirs import ReplicaKey
from kafka_shell.declarations import failure_lines


def ids(values: Iterable[int]) -> str:
    return ",".join(map(str, values))


def replica(key: ReplicaKey) -> str:
    """Kafka's TopicPartitionReplica as its tool prints it: topic-partition-broker."""
    return f"{key[0]}-{key[1]}-{key[2]}"


# -- throttles --------------------------------------------------------------------------------


def throttled_lines(record: dict, unreachable: list[int]) -> list[str]:
    """What `throttles.set_replication` did with `record`."""
    lines = [f"Throttled replication to {record['rate']} B/s on broker(s) "
             f"{ids(b for b in record['brokers'] if b not in unreachable)} and the moving replicas of "
             f"topic(s) {', '.join(sorted(record['topics']))}."]
    if unreachable:
        lines.append(f"Warning: could not throttle broker(s) {ids(unreachable)} (not reachable).")
    return lines


def log_dir_throttled_lines(brokers: list[int], rate: int, unreachable: list[int]) -> list[str]:
    """What `throttles.set_log_dirs` did."""
    lines = [f"The replica-alter-dir throttle limit was set to {rate} B/s on broker(s) "
             f"{ids(b for b in brokers if b not in unreachable)}."]
    if unreachable:
        lines.append(f"Warning: could not throttle broker(s) {ids(unreachable)} (not reachable).")
    return lines


def cleared_lines(cleared: throttles.Cleared) -> list[str]:
    """What `throttles.clear` did (nothing to say when the shell had recorded no throttles)."""
    if not cleared.recorded:
        return []
    if cleared.preserved:
        return ["Throttles kept (--preserve-throttles)."]
    if cleared.moving:
        return [f"Throttles kept: {cleared.moving} throttled partition(s) still moving."]
    lines = _log_dirs_cleared_lines(cleared.log_dirs)
    if cleared.brokers or cleared.topics:
        lines.insert(0, f"Removed the replication throttles kafka-shell set on broker(s) {ids(cleared.brokers)}"
                     + (f" and topic(s) {', '.join(sorted(cleared.topics))}." if cleared.topics else "."))
    if cleared.unreachable:
        lines.append(f"Warning: broker(s) {ids(cleared.unreachable)} not reachable: their throttle stays; "
                     "run reassign-partitions --verify again later to remove it.")
    return lines


def _log_dirs_cleared_lines(cleared: throttles.LogDirsCleared | None) -> list[str]:
    if cleared is None:
        return []
    if cleared.moving or cleared.undescribed:
        why = f"{cleared.moving} replica(s) still moving between log dirs" if cleared.moving else \
            f"broker(s) {ids(cleared.undescribed)} did not describe their log dirs"
        return [f"Log dir throttle kept: {why}."]
    lines = [f"Removed the replica-alter-dir throttle kafka-shell set on broker(s) {ids(cleared.removed)}."] \
        if cleared.removed else []
    if cleared.unreachable:
        lines.append(f"Warning: broker(s) {ids(cleared.unreachable)} not reachable: their log dir throttle stays; "
                     "run reassign-partitions --verify again later to remove it.")
    return lines


# -- moves between log dirs -------------------------------------------------------------------


def dir_moves_lines(done: log_dirs.Started) -> tuple[list[str], list[str]]:
    """What `log_dirs.start_moves` did: (the moves started, the lines of those that failed)."""
    started = [f"Successfully started moving log directory to {path} for replica {k[0]}-{k[1]} with broker {k[2]}"
               for k, path in done.started.items()]
    if done.refused:
        return started, failure_lines.log_dir_move_lines(done.refused)
    if done.waiting:
        return started, [f"Timed out before log directory move{'s' if len(done.waiting) > 1 else ''} could be started "
                         f"for: {','.join(map(replica, done.waiting))}: the replicas have not reached their "
                         "brokers; run --execute again once the reassignment has brought them, or raise --timeout"]
    return started, []


def sent_back_lines(active: dict[ReplicaKey, str], done: log_dirs.Started) -> tuple[list[str], list[str]]:
    """Log dir moves cancelled as Kafka's --cancel does (each replica `active` moved to the dir it
    is in, so its future replica goes): (the line, those of the moves that failed)."""
    _, failed = dir_moves_lines(done)
    return ([f"Successfully cancelled the log dir move(s) of {','.join(map(replica, sorted(active)))}."]
            if done.started else []), failed


def dir_state_lines(states: log_dirs.MoveStates) -> list[str]:
    """Kafka's line for each replica move judged, after one for each broker that did not describe
    its log dirs."""
    lines = failure_lines.log_dir_lines(states.errors)
    for key, m in states.moves.items():
        name = f"{key[0]}-{key[1]}"
        if m.state == log_dirs.MISSING:
            lines.append(f"Partition {name} cannot be found in any live log directory on broker {key[2]}.")
        elif m.state == log_dirs.MOVING:
            lines.append(f"Reassignment of replica {replica(key)} is still in progress.")
        elif m.state == log_dirs.ELSEWHERE:
            lines.append(f"Partition {name} on broker {key[2]} is being moved to log dir {m.future} instead of "
                         f"{m.target}.")
        elif m.state == log_dirs.DONE:
            lines.append(f"Reassignment of replica {replica(key)} completed successfully.")
        else:
            lines.append(f"Partition {name} on broker {key[2]} is not being moved from log dir {m.current} to "
                         f"{m.target}.")
    return lines
