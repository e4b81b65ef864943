"""What the sandbox's groups of the new protocols (KIP-848 consumer groups, KIP-932 share groups)
do alike, as Kafka 4.4's GroupMetadataManager does for its ModernGroups: find a group of one
type, read the subscribed topics' metadata, compute the target assignment at most once per
assignment interval, and fence members whose session ended. Each type's coordinator subclasses
`Coordinator` with its group class, its config prefix, its own `_assign` and how a member is `_remove`d.
Timers live on the runtime (`ClusterState.runtime.group_timers`), never in a group.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import group_configs, replay
from kafka_shell.sandbox import classic_groups as classic
from kafka_shell.sandbox.model import ClusterState, now_ms
from kafka_shell.sandbox.records import Record


class GroupError(Exception):
    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


class Coordinator:
    """Group operations for one request; timers run on the loop."""

    kind: ClassVar[str]             # "consumer", "share": the config prefix and the messages' noun
    group_class: ClassVar[type]
    # The members' subscriptions name the group's topics (consumer, share); a streams group's
    # topology does, so a member leaving does not change them.
    members_subscribe: ClassVar[bool] = True

    def __init__(self, cluster: ClusterState):
        self.cluster = cluster
        self.groups = classic.all_groups(cluster)

    def group(self, group_id: str) -> Any:
        g = self.groups.get(group_id)
        if g is None:
            raise GroupError(ErrorCode.group_id_not_found, f"{self.kind.capitalize()} group {group_id} not found.")
        if not isinstance(g, self.group_class):
            raise GroupError(ErrorCode.group_id_not_found, f"Group {group_id} is not a {self.kind} group.")
        return g

    def _draft(self, g: Any) -> Any:
        """A copy of the group to compute its next state on (Kafka's member and group builders):
        the live group changes only when the records of the difference are replayed. Its
        committed offsets are shared: no group operation here writes them."""
        return copy.deepcopy(g, {id(g.offsets): g.offsets})

    def _changes(self, live: Any, new: Any) -> list[Record]:
        """The records that make `new` of the group as it is (`live`; None when there is none)."""
        from kafka_shell.sandbox import group_state  # it imports the coordinators
        return group_state.changes(self.cluster, live, new)

    def _write(self, live: Any, new: Any) -> None:
        replay.apply_all(self.cluster, self._changes(live, new))

    def _live(self, group_id: str) -> Any:
        """The group of this coordinator's type (None: gone, or of another type), for a timer."""
        g = self.groups.get(group_id)
        return g if isinstance(g, self.group_class) else None

    def _metadata(self, g: Any) -> dict[str, tuple[uuid.UUID, int]]:
        """Each subscribed topic that exists: its id and partition count."""
        out = {}
        for name in sorted(g.subscribed_topics(self.cluster)):
            t = self.cluster.topics.get(name)
            if t is not None:
                out[name] = (t.id, len(t.partitions))
        return out

    # target assignment -----------------------------------------------------------------------------

    def _maybe_assign(self, g: Any) -> None:
        """A new target assignment when the group epoch moved past it, at most once per
        <kind>.assignment.interval.ms (Kafka 4.4); a later one is scheduled for then."""
        if g.epoch <= g.assignment_epoch:
            return
        interval = group_configs.value(self.cluster, g.group_id, f"{self.kind}.assignment.interval.ms")
        wait_ms = g.assignment_time_ms + interval - now_ms()
        if g.assignment_time_ms and wait_ms > 0:
            key = (g.group_id, "", "assignment")
            if key not in self.cluster.runtime.group_timers:
                self._schedule(key, wait_ms, self._assign_later, g.group_id)
            return
        self._assign(g)

    def _assign_later(self, group_id: str) -> None:
        g = self._live(group_id)
        if g is not None and g.epoch > g.assignment_epoch:
            self._assign_now(g)   # members reconcile towards it at their next heartbeat, as in Kafka

    def _assign_now(self, g: Any) -> None:
        """The target assignment computed (on a draft) and written."""
        new = self._draft(g)
        self._assign(new)
        self._write(g, new)

    def _assign(self, g: Any) -> None:
        raise NotImplementedError

    # timers (runtime only: Kafka's CoordinatorTimer) ------------------------------------------------

    def _schedule(self, key: tuple[str, str, str], delay_ms: float, callback: Callable[..., None], *args: Any) -> None:
        """Run `callback` after `delay_ms`, replacing the timer of the same key."""
        timers = self.cluster.runtime.group_timers
        self.cancel_timer(key)

        def fire() -> None:
            timers.pop(key, None)
            callback(*args)
        timers[key] = asyncio.get_running_loop().call_later(delay_ms / 1000, fire)

    def cancel_timer(self, key: tuple[str, str, str]) -> None:
        handle = self.cluster.runtime.group_timers.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for what in ("session", "rebalance"):
            self.cancel_timer((group_id, member_id, what))

    # sessions -----------------------------------------------------------------------------------

    def _schedule_session(self, g: Any, m: Any) -> None:
        timeout = group_configs.value(self.cluster, g.group_id, f"{self.kind}.session.timeout.ms")
        self._schedule((g.group_id, m.member_id, "session"), timeout, self._expire, g.group_id, m.member_id)

    def _expire(self, group_id: str, member_id: str) -> None:
        g = self._live(group_id)
        m = g.members.get(member_id) if g is not None else None
        if m is not None:
            self.fence(g, m)

    def fence(self, g: Any, m: Any) -> None:
        replay.apply_all(self.cluster, self._fenced(g, m))

    def _fenced(self, g: Any, m: Any) -> list[Record]:
        """The records of the member leaving the group (left, expired, or too slow to revoke):
        the group epoch moves so that what it held goes to the others; with no member left, the
        empty target at once (nothing to wait for)."""
        new = self._draft(g)
        self._remove(new, m)
        new.epoch += 1
        if self.members_subscribe:
            new.metadata = self._metadata(new)
        if not new.members:
            new.targets, new.assignment_epoch = {}, new.epoch
        self._maybe_assign(new)
        return self._changes(g, new)

    def _remove(self, g: Any, m: Any) -> None:
        """`m` (a member of the live group) taken out of `g`, a draft of it, with its target."""
        self.cancel_member_timers(g.group_id, m.member_id)
        g.members.pop(m.member_id, None)
        g.targets.pop(m.member_id, None)

    def resume(self) -> None:
        """Start the sessions of members brought back by --data-dir (loop thread, at start)."""
        for g in list(self.groups.values()):
            if isinstance(g, self.group_class):
                for m in g.members.values():
                    self._schedule_session(g, m)
