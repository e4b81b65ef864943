"""What the sandbox's groups of the new protocols (KIP-848 consumer groups, KIP-932 share groups)
do alike, as Kafka 4.4's GroupMetadataManager does for its ModernGroups: find a group of one
type, read the subscribed topics' metadata, compute the target assignment at most once per
assignment interval, and fence members whose session ended. Each type's coordinator subclasses
`Coordinator` with its group class, its config prefix and its own `_assign`, `fence`, `_store`.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, ClassVar

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import group_configs
from kafka_shell.sandbox import classic_groups as classic
from kafka_shell.sandbox.model import ClusterState, now_ms


class GroupError(Exception):
    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


class Coordinator:
    """Group operations for one request; timers run on the loop."""

    kind: ClassVar[str]             # "consumer", "share": the config prefix and the messages' noun
    group_class: ClassVar[type]

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
            if g.pending_assignment is None:
                g.pending_assignment = asyncio.get_running_loop().call_later(wait_ms / 1000, self._assign_later, g)
            return
        self._assign(g)

    def _assign_later(self, g: Any) -> None:
        g.pending_assignment = None
        current: Any = self.groups.get(g.group_id)
        if current is g and g.epoch > g.assignment_epoch:
            self._assign(g)   # members reconcile towards it at their next heartbeat, as in Kafka
            self._store(g)

    def _assign(self, g: Any) -> None:
        raise NotImplementedError

    # sessions -----------------------------------------------------------------------------------

    def _schedule_session(self, g: Any, m: Any) -> None:
        if m.session is not None:
            m.session.cancel()
        timeout = group_configs.value(self.cluster, g.group_id, f"{self.kind}.session.timeout.ms")
        m.session = asyncio.get_running_loop().call_later(timeout / 1000, self._expire, g, m.member_id)

    def _expire(self, g: Any, member_id: str) -> None:
        m = g.members.get(member_id)
        if m is not None and self.groups.get(g.group_id) is g:
            self.fence(g, m)

    def fence(self, g: Any, m: Any) -> None:
        raise NotImplementedError

    def resume(self) -> None:
        """Start the sessions of members brought back by --data-dir (loop thread, at start)."""
        for g in list(self.groups.values()):
            if isinstance(g, self.group_class):
                for m in g.members.values():
                    self._schedule_session(g, m)

    def _store(self, g: Any) -> None:
        raise NotImplementedError
