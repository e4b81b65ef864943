"""Consumer groups, committed offsets and log offsets: what the group and record commands share.

Group requests go to each group's coordinator, found with FindCoordinator (batched, v4+, where
the cluster has it). NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE
are retried, with the coordinator looked up again, until the command's deadline (`--timeout`),
as Kafka's AdminClient does. Log offsets (ListOffsets) go to each partition's leader, one
request per leader. Everything here reads the cluster when it runs; nothing comes from the cache.
"""

from __future__ import annotations

import concurrent.futures
import functools
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_shell import protocol
from kafka_shell.codes import ApiKey, Error
from kafka_shell.errors import KafkaCallError, ShellError, UsageError, kafka_error_message, shown
from kafka_shell.metadata import ClusterSnapshot
from kafka_shell.operations import debug
from kafka_shell.render import Result, Table
from kafka_shell.router import INITIAL_BACKOFF_S, MAX_BACKOFF_S

if TYPE_CHECKING:
    from kafka_shell.session import Session

Key = tuple[str, int]
GROUP_KEY_TYPE = 0
# Errors that mean "ask again, maybe elsewhere" (Kafka's AdminClient retries these).
COORDINATOR_RETRIABLE = {Error.not_coordinator, Error.coordinator_load_in_progress,
                         Error.coordinator_not_available}
LEADER_RETRIABLE = {Error.not_leader_or_follower, Error.leader_not_available, Error.fenced_leader_epoch,
                    Error.unknown_leader_epoch}
# ListOffsets timestamps with a meaning of their own (Kafka's ListOffsetsRequest).
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
# OffsetCommit and OffsetFetch v10 name topics by id (KIP-848): we name them, so stay below.
BY_NAME_VERSION: dict[int, int] = {ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9}
MAX_TIMESTAMP_VERSION = 7   # ListOffsets learnt -3 in v7 (KIP-734)

# One line per group error code, saying what to do.
GROUP_ERRORS: dict[int, str] = {
    Error.group_id_not_found: "Consumer group '{group}' does not exist (see list-groups).",
    Error.non_empty_group: "Consumer group '{group}' is not empty: stop its consumers first.",
    Error.group_subscribed_to_topic: ("Consumer group '{group}' is subscribed to the topic: stop its "
                                      "consumers (or change their subscription) first."),
    Error.invalid_group_id: "'{group}' is not a valid group id.",
    Error.group_authorization_failed: "Not authorized to access group '{group}': ask an administrator for the ACL.",
    Error.not_coordinator: "The coordinator of group '{group}' moved and did not settle in time: retry.",
    Error.coordinator_load_in_progress: "The coordinator of group '{group}' is still loading: retry shortly.",
    Error.coordinator_not_available: ("No coordinator is available for group '{group}' (its __consumer_offsets "
                                      "partition has no leader): bring brokers back, then retry."),
    Error.unknown_member_id: "Consumer group '{group}' has active members: stop its consumers first.",
    Error.rebalance_in_progress: "Consumer group '{group}' is rebalancing: stop its consumers first.",
}


def group_error(code: int, group: str, detail: str | None = None, **context: object) -> str:
    template = GROUP_ERRORS.get(code)
    if template is not None:
        return template.format(group=shown(group))
    return f"Group '{shown(group)}': " + kafka_error_message(code, _error_name(code), detail or "", **context)


def _error_name(code: int) -> str:
    try:
        return Error(code).name.upper()
    except ValueError:
        return f"error {code}"


# -- listing and describing groups -------------------------------------------------------------


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str
    protocol_type: str
    group_type: str
    coordinator: int


def list_groups(session: Session, states: Iterable[str] = ()) -> tuple[list[GroupListing], list[str]]:
    """Every group of the cluster (each broker lists the groups it coordinates), optionally only
    those in `states`; and one line per broker that failed to answer."""
    wanted = {s.lower() for s in states}
    brokers = session.conn.read([]).brokers
    out: dict[str, GroupListing] = {}
    failures = []
    for broker_id in sorted(brokers):
        debug(session, f"ListGroups request to broker {broker_id}")
        try:
            answer = session.conn.broker_request(broker_id, ApiKey.LIST_GROUPS,
                                                 {"states_filter": sorted(wanted), "types_filter": []})
        except ShellError as exc:
            failures.append(f"Broker {broker_id} did not list its groups: {exc}")
            continue
        if answer.get("error_code"):
            failures.append(f"Broker {broker_id} did not list its groups: "
                            + kafka_error_message(answer["error_code"], _error_name(answer["error_code"])))
            continue
        for g in answer.get("groups", []):
            state = g.get("group_state") or ""
            if wanted and state.lower() not in wanted:  # brokers before v4 do not filter
                continue
            out[g["group_id"]] = GroupListing(g["group_id"], state, g.get("protocol_type") or "",
                                              g.get("group_type") or "classic", broker_id)
    return [out[k] for k in sorted(out)], failures


@dataclass
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: list[Key] = field(default_factory=list)


@dataclass
class GroupDescription:
    group_id: str
    error: int = 0
    error_message: str | None = None
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    coordinator: int = -1
    members: list[Member] = field(default_factory=list)

    @property
    def exists(self) -> bool:
        return not self.error and self.state != "Dead"

    @property
    def active(self) -> bool:
        """Kafka resets offsets only of groups that are Empty (or do not exist: Dead)."""
        return self.state not in ("Empty", "Dead")


def consumer_assignment(data: bytes) -> list[Key]:
    """Partitions of a ConsumerProtocolAssignment (version, [topic, [partition]], user data);
    empty when the bytes are not one (another protocol type)."""
    out: list[Key] = []
    try:
        (count,) = struct.unpack_from(">i", data, 2)
        pos = 6
        for _ in range(max(count, 0)):
            (n,) = struct.unpack_from(">h", data, pos)
            topic = data[pos + 2:pos + 2 + n].decode()
            pos += 2 + n
            (parts,) = struct.unpack_from(">i", data, pos)
            pos += 4
            out += [(topic, p) for p in struct.unpack_from(f">{max(parts, 0)}i", data, pos)]
            pos += 4 * max(parts, 0)
    except (struct.error, UnicodeDecodeError):
        return []
    return out


def describe_groups(session: Session, group_ids: list[str]) -> dict[str, GroupDescription]:
    """DescribeGroups of each group at its coordinator; a group that does not exist comes back
    with GROUP_ID_NOT_FOUND (older brokers say state Dead, which is turned into that)."""
    parts = ask_coordinators(
        session, group_ids, ApiKey.DESCRIBE_GROUPS,
        lambda ids: {"groups": ids, "include_authorized_operations": False},
        lambda answer: {g["group_id"]: g for g in answer.get("groups", [])})
    out = {}
    for gid in group_ids:
        g, node = parts[gid]
        d = GroupDescription(gid, g.get("error_code", 0), g.get("error_message"), g.get("group_state", ""),
                             g.get("protocol_type", ""), g.get("protocol_data", ""), node)
        if not d.error and d.state == "Dead":
            d.error = Error.group_id_not_found
        consumer = d.protocol_type in ("consumer", "")
        d.members = [Member(m["member_id"], m.get("group_instance_id"), m.get("client_id", ""),
                            m.get("client_host", ""),
                            consumer_assignment(m.get("member_assignment") or b"") if consumer else [])
                     for m in g.get("members", [])]
        out[gid] = d
    return out


# -- committed offsets -------------------------------------------------------------------------


def committed_offsets(session: Session, group_id: str) -> dict[Key, int]:
    """The group's committed offsets (OffsetFetch of every topic), at its coordinator. The
    answer is read as kio entities: a group may hold offsets of 10,000s of partitions."""
    body = {"group_id": group_id, "topics": None, "require_stable": False,
            "groups": [{"group_id": group_id, "topics": None}]}
    answer, _ = ask_coordinators(session, [group_id], ApiKey.OFFSET_FETCH, lambda ids: body,
                                 lambda a: {group_id: a.groups[0] if hasattr(a, "groups") else a},
                                 entity=True)[group_id]
    code = error_code(answer)
    if code:
        raise KafkaCallError(group_error(code, group_id), code=code)
    out = {}
    for t in answer.topics:
        name = t.name
        for p in t.partitions:
            if p.error_code:
                raise KafkaCallError(f"{name}-{p.partition_index}: " + group_error(p.error_code, group_id),
                                     code=int(p.error_code))
            if p.committed_offset >= 0:
                out[(name, p.partition_index)] = p.committed_offset
    return out


def error_code(part: Any) -> int:
    """The error code of an answer's part, a dict or a kio entity (0 where it has none)."""
    if isinstance(part, dict):
        return part.get("error_code", 0)
    return int(getattr(part, "error_code", 0))


def commit_offsets(session: Session, group_id: str, offsets: dict[Key, int]) -> dict[Key, int]:
    """Commit `offsets` for the group as an admin does (no member, generation -1); the error
    code of each partition (0 when committed)."""
    topics: dict[str, list[dict]] = {}
    for (t, p), offset in sorted(offsets.items()):
        topics.setdefault(t, []).append({"partition_index": p, "committed_offset": offset,
                                         "committed_leader_epoch": -1, "committed_metadata": ""})
    body = {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "retention_time": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    def split(answer: dict) -> dict[str, dict]:
        codes = [p["error_code"] for t in answer.get("topics", []) for p in t["partitions"]]
        # The whole commit is retried when the coordinator refused it all.
        code = codes[0] if codes and all(c == codes[0] for c in codes) and codes[0] in COORDINATOR_RETRIABLE else 0
        return {group_id: {**answer, "error_code": code}}
    answer, _ = ask_coordinators(session, [group_id], ApiKey.OFFSET_COMMIT, lambda ids: body, split,
                                 mutation=True)[group_id]
    out = {(t["name"], p["partition_index"]): p["error_code"]
           for t in answer.get("topics", []) for p in t["partitions"]}
    for key in offsets:
        out.setdefault(key, answer.get("error_code") or Error.unknown_server_error)
    return out


def delete_groups(session: Session, group_ids: list[str]) -> dict[str, tuple[int, str | None]]:
    """DeleteGroups at each group's coordinator: group -> (error code, message)."""
    parts = ask_coordinators(session, group_ids, ApiKey.DELETE_GROUPS, lambda ids: {"groups_names": ids},
                             lambda a: {r["group_id"]: r for r in a.get("results", [])}, mutation=True)
    return {gid: (parts[gid][0].get("error_code", 0), parts[gid][0].get("error_message")) for gid in group_ids}


def delete_offsets(session: Session, group_id: str, keys: list[Key]) -> tuple[int, dict[Key, int]]:
    """OffsetDelete: the group-level error code and each partition's."""
    topics: dict[str, list[dict]] = {}
    for t, p in sorted(keys):
        topics.setdefault(t, []).append({"partition_index": p})
    body = {"group_id": group_id, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    answer, _ = ask_coordinators(session, [group_id], ApiKey.OFFSET_DELETE, lambda ids: body,
                                 lambda a: {group_id: a}, mutation=True)[group_id]
    return answer.get("error_code", 0), {(t["name"], p["partition_index"]): p["error_code"]
                                         for t in answer.get("topics", []) for p in t["partitions"]}


# -- coordinators ------------------------------------------------------------------------------


def find_coordinators(session: Session, group_ids: list[str]) -> dict[str, tuple[int, int]]:
    """group -> (coordinator node id, error code): one batched FindCoordinator (v4+), or one
    request per group on clusters without batching."""
    debug(session, f"FindCoordinator request: {len(group_ids)} group(s)")
    if session.conn.supports(ApiKey.FIND_COORDINATOR, 4):
        answer = session.conn.any_broker_request(
            ApiKey.FIND_COORDINATOR, {"key_type": GROUP_KEY_TYPE, "coordinator_keys": group_ids})
        return {c["key"]: (c["node_id"], c["error_code"]) for c in answer.get("coordinators", [])}
    out = {}
    for gid in group_ids:
        answer = session.conn.any_broker_request(ApiKey.FIND_COORDINATOR, {"key": gid, "key_type": GROUP_KEY_TYPE})
        out[gid] = (answer.get("node_id", -1), answer.get("error_code", 0))
    return out


def ask_coordinators(session: Session, group_ids: list[str], api_key: int, body_for: Callable[[list[str]], dict],
                     split: Callable[[Any], dict[str, Any]], mutation: bool = False,
                     entity: bool = False) -> dict[str, tuple[Any, int]]:
    """Each group's part of its coordinator's answer, with the coordinator's id: one request per
    coordinator for the groups it holds. Groups answered with a coordinator error are looked
    up again and asked again with backoff until `--timeout`; past it, their last answer stands
    (a part with only `error_code` when the coordinator could not be found). With `entity`
    (reads only) `split` gets the kio entity rather than dicts."""
    deadline = time.monotonic() + session.conn.timeout_s
    backoff = INITIAL_BACKOFF_S
    out: dict[str, tuple[Any, int]] = {}
    pending = list(dict.fromkeys(group_ids))
    while pending:
        retry = []
        coordinators = find_coordinators(session, pending)
        by_node: dict[int, list[str]] = {}
        for gid in pending:
            node, code = coordinators.get(gid, (-1, Error.coordinator_not_available))
            if code or node < 0:
                out[gid] = ({"error_code": code or Error.coordinator_not_available}, -1)
                retry.append(gid)
            else:
                by_node.setdefault(node, []).append(gid)
        for node, ids in by_node.items():
            debug(session, f"{ApiKey(api_key).name} request to coordinator {node}: {len(ids)} group(s)")
            version = _version(session, node, api_key)
            try:
                if entity:
                    answer = session.conn.broker_request_entity(node, api_key, body_for(ids), version)
                else:
                    answer = session.conn.broker_request(node, api_key, body_for(ids), version, mutation=mutation)
            except KafkaCallError as exc:
                if mutation or time.monotonic() + backoff >= deadline:
                    raise
                debug(session, f"coordinator {node} did not answer: {exc}")
                retry += ids
                continue
            parts = split(answer)
            for gid in ids:
                part = parts.get(gid, {"error_code": Error.unknown_server_error})
                out[gid] = (part, node)
                if error_code(part) in COORDINATOR_RETRIABLE:
                    retry.append(gid)
        if not retry or time.monotonic() + backoff >= deadline:
            break
        debug(session, f"{len(retry)} group(s) to ask again: the coordinator moved or is loading")
        time.sleep(backoff)
        backoff = min(backoff * 2, MAX_BACKOFF_S)
        pending = retry
    return out


def _version(session: Session, node: int, api_key: int) -> int | None:
    """The newest version both sides have, up to BY_NAME_VERSION's cap for the API (None when
    they share none: the request then fails with the channel's own message)."""
    cap = BY_NAME_VERSION.get(api_key, 2**15)
    theirs = session.conn.api_versions(node).get(api_key, range(0))
    common = [v for v in theirs if v in protocol.kio_versions(api_key) and v <= cap]
    return max(common) if common else None


@functools.cache
def _list_offsets_partition(version: int) -> Callable[..., object]:
    """Partitions of a ListOffsets request made as entities at once (10,000s per request)."""
    cls = protocol.element_class(protocol.element_class(protocol.request_schema(ApiKey.LIST_OFFSETS, version),
                                                        "topics"), "partitions")
    return protocol.maker(cls, current_leader_epoch=-1, max_num_offsets=1)


# -- log offsets -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogOffset:
    offset: int           # -1 when no record matches (a timestamp after the last record)
    timestamp: int = -1
    error: int = 0


def log_offsets(session: Session, snap: ClusterSnapshot, keys: Iterable[Key], timestamp: int) -> dict[Key, LogOffset]:
    """ListOffsets for `timestamp` (LATEST, EARLIEST, MAX_TIMESTAMP or ms) of each partition, at
    its leader (one request per leader; one retry on a fresh read for partitions whose leader
    moved)."""
    keys = list(keys)
    out: dict[Key, LogOffset] = {}
    for attempt in range(2):
        by_leader: dict[int, list[Key]] = {}
        for key in keys:
            topic = snap.topics.get(key[0])
            parts = topic.partitions if topic else ()
            if not 0 <= key[1] < len(parts):
                out[key] = LogOffset(-1, error=Error.unknown_topic_or_partition)
            elif parts[key[1]].leader < 0:
                out[key] = LogOffset(-1, error=Error.leader_not_available)
            else:
                by_leader.setdefault(parts[key[1]].leader, []).append(key)
        # One request per leader, all at once: each leader answers while we read the others.
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(by_leader), 16))) as pool:
            for answer in pool.map(lambda item: _list_offsets_at(session, item[0], item[1], timestamp),
                                   sorted(by_leader.items())):
                out.update(answer)
        moved = [k for k in keys if out[k].error in LEADER_RETRIABLE]
        if not moved or attempt:
            break
        snap, keys = session.conn.read(sorted({t for t, _ in moved})), moved
    return out


def _list_offsets_at(session: Session, leader: int, keys: list[Key], timestamp: int) -> dict[Key, LogOffset]:
    try:
        version = _version(session, leader, ApiKey.LIST_OFFSETS)
    except KafkaCallError:
        return {k: LogOffset(-1, error=Error.leader_not_available) for k in keys}
    if version is None:
        raise ShellError(f"Broker {leader} does not support a ListOffsets version the shell has.")
    if timestamp == MAX_TIMESTAMP and version < MAX_TIMESTAMP_VERSION:
        raise ShellError("This cluster does not support --time max-timestamp (ListOffsets v7, Kafka 3.0+).")
    make = _list_offsets_partition(version)
    topics: dict[str, list[object]] = {}
    for t, p in keys:
        topics.setdefault(t, []).append(make(partition_index=p, timestamp=timestamp))
    body = {"replica_id": -1, "isolation_level": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    debug(session, f"ListOffsets request to broker {leader}: {len(keys)} partition(s)")
    try:
        answer = session.conn.broker_request_entity(leader, ApiKey.LIST_OFFSETS, body, version)
    except KafkaCallError:
        return {k: LogOffset(-1, error=Error.leader_not_available) for k in keys}
    out = {}
    for t in answer.topics:
        name = t.name
        for p in t.partitions:
            out[(name, p.partition_index)] = LogOffset(getattr(p, "offset", -1), getattr(p, "timestamp", -1),
                                                       int(p.error_code))
    return {k: out.get(k, LogOffset(-1, error=Error.unknown_server_error)) for k in keys}


def offset_error(key: Key, code: int) -> str:
    return f"{key[0]}-{key[1]}: " + kafka_error_message(code, _error_name(code), "", topic=key[0])


# -- results -----------------------------------------------------------------------------------


def outcome(tables: list[Table], notes: list[str], failures: list[str], text: str | None = None) -> Result:
    """A command's result where parts may fail: the tables (or `text`) and notes, then one line
    per failure and exit 1 if any. When nothing succeeded, only the lines: no empty tables."""
    if failures and not any(t.rows for t in tables):
        return Result.message(*notes, *failures, exit_code=1)
    return Result(tables=tables, text=text, messages=[*notes, *failures], exit_code=1 if failures else 0)


# -- topic[:partition,...] arguments -----------------------------------------------------------


def topic_partitions(session: Session, snap: ClusterSnapshot, specs: list[str]) -> list[Key]:
    """Kafka's `--topic t` (every partition) or `--topic t:0,2` arguments as partitions, checked
    against the read `snap` (an unknown topic or partition is an error)."""
    out: list[Key] = []
    for spec in specs:
        name, colon, parts = spec.partition(":")
        topic = snap.topics.get(name)
        if topic is None:
            raise KafkaCallError(f'Topic "{shown(name)}" does not exist (check the name with list-topics).',
                                 code=Error.unknown_topic_or_partition)
        if not colon:
            out += [(name, p.partition) for p in topic.partitions]
            continue
        for text in parts.split(","):
            if not text.strip().isdigit():
                raise UsageError(f"Invalid partition '{shown(text)}' in '{shown(spec)}': "
                                 "expected topic:partition,partition (e.g. orders:0,2)")
            p = int(text)
            if p >= len(topic.partitions):
                raise UsageError(f'Topic "{name}" has no partition {p} (it has {len(topic.partitions)})')
            out.append((name, p))
    return list(dict.fromkeys(out))


def topic_names(specs: list[str]) -> list[str]:
    return list(dict.fromkeys(s.partition(":")[0] for s in specs))
