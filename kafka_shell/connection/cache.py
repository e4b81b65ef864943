"""The metadata cache and its refresher: what completion, the toolbar and routing read.

Never what a command shows or plans from: commands read the cluster when they run
(`ConnectionManager.read`). The snapshot is rebuilt on a thread (`refresh_in_background`) and
swapped in with one assignment, so `snapshot` never blocks. When a refresh cannot reach the
cluster, `unreachable_since` says since when (the toolbar shows it instead of old counts).
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kafka_shell.protocol import codec
from kafka_shell.protocol.authorization import is_authorization_error
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.debug_log import DebugLog
from kafka_shell.base.deadline import Deadline
from kafka_shell.base.errors import ClusterUnreachable, KafkaCallError, ShellError
from kafka_shell.connection.channel import Channel
from kafka_shell.connection.metadata import (EMPTY, ZOOKEEPER, BrokerInfo, ClusterSnapshot, group_listings, topics_from_metadata,
                                  unauthorized_topics)
from kafka_shell.connection.router import Router

log = DebugLog("kafka_shell.connection.cache")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Decoding a large cluster's metadata creates a few hundred thousand objects that all stay
    alive (the snapshot): the cyclic GC would only walk them over and over (up to half the
    refresh time at 100,000 partitions). Nothing built here forms cycles. Afterwards what was
    built goes straight to the oldest generation (or stays frozen where the process keeps its
    long-lived objects frozen, as the REPL does): else the next young collection walks it all
    once (a tenth of a 10,000-partition describe-group's CPU)."""
    enabled = gc.isenabled()
    frozen_before = gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()   # also zeroes the young generation's count
        if not frozen_before:
            gc.unfreeze()   # into the oldest generation: collectable again, walked only in full passes
        if enabled:
            gc.enable()


def read_snapshot(router: Router, deadline: Deadline, topics: Iterable[str] | None = None,
                  controller: bool = True) -> ClusterSnapshot:
    """One Metadata request (the named topics, or all of them) and, with `controller`, the
    active controller by the cluster's own rules (KRaft: DescribeQuorum; ZooKeeper: the same
    Metadata answer, so it is always there). Without it, KRaft snapshots carry the controller
    last seen: only for routing, never to show."""
    names = None if topics is None else [{"name": n} for n in topics]
    answered_by: list[str] = []

    def ask(ch: Channel) -> Any:
        answer = ch.request_entity(ApiKey.METADATA, {"topics": names, "allow_auto_topic_creation": False},
                                   deadline=deadline)
        answered_by.append(f"{ch.host}:{ch.port}")
        return answer

    with gc_paused():
        metadata: Any = router.from_any_broker(ask, deadline)
        if router.mode == ZOOKEEPER:
            metadata = _from_zk_controller(router, ask, metadata, answered_by[0], deadline)
        if controller:
            router.refresh_controller(deadline, metadata)
        else:
            router.observe_metadata(metadata)
        return ClusterSnapshot(
            cluster_id=getattr(metadata, "cluster_id", None),
            controller=router.controller,
            brokers=dict(router.brokers),
            topics=topics_from_metadata(metadata.topics),
            unauthorized=unauthorized_topics(metadata.topics),
        )


def _from_zk_controller(router: Router, ask: Callable[[Channel], Any], metadata: Any, answered_by: str,
                        deadline: Deadline) -> Any:
    """In ZooKeeper mode the controller broker learns each change first (the others get it from
    it a moment later, in UpdateMetadata): a read goes to it when another broker answered, and
    keeps that answer only if the controller does not answer."""
    router.observe_metadata(metadata)
    broker = router.brokers.get(router.controller.id)
    if broker is None or broker.address == answered_by:
        return metadata
    try:
        return ask(router.broker_channel(broker, deadline))
    except ShellError as exc:
        log.debug("the controller broker did not answer Metadata: %s", exc)
        return metadata


class MetadataCache:
    def __init__(self, router: Router, timeout_s: float):
        self.router = router
        self.timeout_s = timeout_s
        self.unreachable_since: float | None = None
        self.controller_refused: str | None = None   # why the last refresh could not name the controller
        self._snapshot = EMPTY
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()  # one refresh at a time
        self._refreshing = False
        self._refresh_again = False
        self._thread: threading.Thread | None = None

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    @property
    def refreshing(self) -> bool:
        return self._refreshing

    def refresh(self) -> ClusterSnapshot:
        """Read metadata, the controller and group ids now and swap in the new snapshot."""
        with self._refresh_lock:
            deadline = Deadline(self.timeout_s)
            if self.router.controllers_only:   # no Metadata there: the cluster id and the controller
                answer = self.router.read_controllers(deadline)
                self.router.read_quorum(deadline)
                self._snapshot = ClusterSnapshot(answer.cluster_id, self.router.controller, {}, {})
                return self._snapshot
            try:
                snap = read_snapshot(self.router, deadline)
                self.controller_refused = None
            except ClusterUnreachable:
                self.mark_unreachable()
                raise
            except KafkaCallError as exc:
                if not is_authorization_error(exc.code):
                    raise
                # The principal may not learn the active controller (KRaft: DescribeQuorum needs
                # DESCRIBE on the cluster): the cache serves without it, and says why.
                self.controller_refused = str(exc)
                snap = read_snapshot(self.router, deadline, controller=False)
            self.unreachable_since = None
            groups, transactional_ids = self._listed_ids(snap.brokers.values(), deadline)
            self._snapshot = ClusterSnapshot(snap.cluster_id, snap.controller, snap.brokers, snap.topics,
                                             groups=groups, transactional_ids=transactional_ids)
            return self._snapshot

    def mark_unreachable(self) -> None:
        if self.unreachable_since is None:
            self.unreachable_since = time.time()

    def offer(self, snap: ClusterSnapshot) -> None:
        """A full read a command made: fresher than the cache, so the cache takes it (keeping
        its group and transactional ids, which that read did not ask for)."""
        with self._lock:
            if snap.taken_at >= self._snapshot.taken_at:
                self._snapshot = ClusterSnapshot(snap.cluster_id, snap.controller, snap.brokers, snap.topics,
                                                 groups=self._snapshot.groups,
                                                 transactional_ids=self._snapshot.transactional_ids, taken_at=snap.taken_at)
                self.unreachable_since = None

    def refresh_in_background(self) -> None:
        """Refresh on a thread; a request made while one runs starts another right after it, so
        a refresh asked for after a mutation always sees that mutation."""
        with self._lock:
            if self._refreshing:
                self._refresh_again = True
                return
            self._refreshing = True
            self._thread = threading.Thread(target=self._background_refresh,
                                            name="kafka-shell-refresh", daemon=True)
            self._thread.start()

    def refresh_after_change(self, wait_s: float) -> None:
        """Refresh after the shell changed the cluster, waiting at most `wait_s` for it: the
        next Tab knows the change, and a slow broker does not hold the prompt (the refresh
        finishes in the background, the toolbar saying so)."""
        self.refresh_in_background()
        thread = self._thread
        if thread is not None:
            thread.join(wait_s)

    def _background_refresh(self) -> None:
        while True:
            try:
                self.refresh()
            except Exception as exc:  # keep the old cache; the next command reports the problem
                log.debug("background refresh failed: %s", exc)
            with self._lock:
                if not self._refresh_again:
                    self._refreshing = False
                    return
                self._refresh_again = False

    def close(self) -> None:
        # A refresh still running would be cut off mid-request at interpreter exit (a daemon
        # thread inside native decoding can abort the process): let it finish first.
        thread = self._thread
        if thread is not None:
            thread.join(self.timeout_s)

    def _listed_ids(self, brokers: Iterable[BrokerInfo], deadline: Deadline) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Group ids and transactional ids from every broker (each lists the groups and the
        transactional ids it coordinates: ListGroups, ListTransactions); best effort: brokers
        that fail or do not answer before the deadline are left out."""
        groups: set[str] = set()
        transactional_ids: set[str] = set()
        for b in brokers:
            if deadline.expired:
                break
            try:
                channel = self.router.broker_channel(b, deadline)
                versions = channel.versions()
                if ApiKey.LIST_GROUPS in versions:
                    answer = channel.request_entity(ApiKey.LIST_GROUPS, {}, deadline=deadline)
                    groups.update(g.group_id for g in group_listings(answer, b.id))
                if ApiKey.LIST_TRANSACTIONS in versions:
                    answer = channel.request_entity(ApiKey.LIST_TRANSACTIONS, {}, deadline=deadline)
                    transactional_ids.update(t.transactional_id for t in answer.transaction_states)
            except (ShellError, codec.ProtocolError, OSError) as exc:
                log.debug("Listing groups or transactions on broker %s failed: %s", b.id, exc)
        return tuple(sorted(groups)), tuple(sorted(transactional_ids))
