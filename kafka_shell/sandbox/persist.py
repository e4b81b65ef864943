"""`--data-dir` state file: the sandbox's state as one JSON file, written atomically and checked
when read.

It holds what a data directory is (the cluster id, the mode, the control endpoint's port: Kafka
keeps these in meta.properties), and `records`: the records that make the rest again
(`replay.snapshot`: the nodes' registrations, the voters and the active controller, configs,
topics and partitions, ACLs, SCRAM credentials, client quotas, the feature levels, the group and
share coordinators' records, and each partition's logs with its newest batches,
base64-encoded, up to `log.KEEP_BYTES`: older batches are dropped and the log start offset moves
past them, as retention would). Start-up applies them through `replay.apply` as it applies the
journals (see `journal.py`, which keeps the records applied since the file was written); `journal`
names the first journal to replay on top. Brokers and controllers come back alive; what the
running server keeps in `ClusterState.runtime` (the replication rate, caches) and injected
faults are not saved. An older format is refused in one line.

Use: `load(dir)` (None when the directory holds no state) and `save(cluster, dir)` from the loop
thread. Everything read is validated, each field and then the state as a whole (`validate`): a
bad file raises `StateError`, one line naming the file and what is wrong. Files are written
0600 in a 0700 directory (`make_private_dir`).
"""

from __future__ import annotations

import ipaddress
import json
import os
import stat
import struct
import tempfile
import uuid
from pathlib import Path

from kafka_shell.sandbox import records, replay, topic_lifecycle
from kafka_shell.sandbox.model import MODES, Batch, Broker, ClusterState, Controller, Partition
from kafka_shell.sandbox.records import Record, ReplayError

STATE_FILE = "sandbox-state.json"
PRIVATE_FILE, PRIVATE_DIR = 0o600, 0o700
TEMP_PREFIX, TEMP_SUFFIX = ".state-", ".tmp"
# 5: the groups as their coordinators' records too (journal format 4). Older files are refused.
FORMAT_VERSION = 5


class StateError(Exception):
    """The data directory holds state this version cannot use (the message names the file)."""


# -- writing ----------------------------------------------------------------------------------


def header(cluster: ClusterState) -> dict:
    """What the state file holds beside its records: the cluster's id and mode and the control
    endpoint's port (what a data directory is, like Kafka's meta.properties)."""
    return {"cluster_id": cluster.cluster_id, "mode": cluster.mode, "control_port": cluster.control_port}


def state_of(cluster: ClusterState, journal_seq: int = 0) -> dict:
    """The whole state as plain data and records (`write` encodes them): cheap to take in the loop
    thread, and safe to write from another one (records are never changed)."""
    return {"version": FORMAT_VERSION, "journal": journal_seq, **header(cluster),
            "records": list(replay.snapshot(cluster))}


def write(state: dict, data_dir: str | os.PathLike, pausable: bool = True) -> Path:
    """Write a `state_of` result to `data_dir/sandbox-state.json`: a temp file, fsynced, renamed
    over the old one, directory fsynced. A crash at any point leaves the old file or the new.
    `pausable`: tests may hold this save (see `pause_for_tests`)."""
    directory = Path(data_dir)
    directory.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    target = directory / STATE_FILE
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(state, f, separators=(",", ":"), default=_encode_record)
            f.flush()
            os.fsync(f.fileno())
        if pausable:
            pause_for_tests()
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    fsync_dir(directory)
    return target


def save(cluster: ClusterState, data_dir: str | os.PathLike, journal_seq: int = 0) -> Path:
    return write(state_of(cluster, journal_seq), data_dir)


def _encode_record(r: object) -> dict:
    if not isinstance(r, Record):
        raise TypeError(f"cannot save {type(r).__name__}")
    return records.encode(r)


def make_private_dir(directory: Path) -> None:
    """Create `directory` (0700), or bring it and what it holds to 0700 for directories and 0600
    for files, where they are ours and others could read them (older versions wrote 0755/0644):
    the state and journals hold SCRAM keys and every record, the TLS directory the CA's key."""
    directory.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    uid = os.geteuid()
    for root, dirs, files in os.walk(directory):
        for path, private in [(Path(root), PRIVATE_DIR), *((Path(root) / f, PRIVATE_FILE) for f in files)]:
            st = path.lstat()
            if st.st_uid == uid and not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
                os.chmod(path, private)
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


PAUSE_ENV = "KAFKA_SHELL_SANDBOX_SAVE_PAUSE"


def pause_for_tests() -> None:
    """Tests set KAFKA_SHELL_SANDBOX_SAVE_PAUSE=seconds to hold compactions and the save at stop
    between the temp file and the rename, so they can kill or interrupt the process there."""
    seconds = os.environ.get(PAUSE_ENV)
    if seconds:
        import time
        time.sleep(float(seconds))


def remove_temp_files(data_dir: str | os.PathLike) -> list[Path]:
    """Delete temp files that saves killed before their rename left behind."""
    removed = []
    for path in Path(data_dir).glob(f"{TEMP_PREFIX}*{TEMP_SUFFIX}"):
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


# -- reading ----------------------------------------------------------------------------------


def load(data_dir: str | os.PathLike) -> ClusterState | None:
    """The saved cluster, or None when `data_dir` holds no state yet."""
    loaded = load_state(data_dir)
    return loaded[0] if loaded else None


def load_state(data_dir: str | os.PathLike) -> tuple[ClusterState, int] | None:
    """The saved cluster and the first journal to replay on it; None when there is no state."""
    path = Path(data_dir) / STATE_FILE
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise StateError(f"{path} is not valid JSON ({exc}): move it away to start afresh") from None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}") from None
    check = Checker(path)
    if not isinstance(state, dict):
        raise StateError(f"{path}: the state must be a JSON object")
    version = state.get("version")
    if version != FORMAT_VERSION:
        older = " (an older kafka-shell's)" if isinstance(version, int) and 0 < version < FORMAT_VERSION else ""
        raise StateError(f"{path} has format version {version!r}{older}; this sandbox reads version "
                         f"{FORMAT_VERSION}: serve {path.parent} with the kafka-shell that wrote it, or move it "
                         "away to start afresh")
    seq = check.integer(state.get("journal", 0), "journal", low=0)
    cluster = cluster_from_header(check, state)
    for i, item in enumerate(check.array(state.get("records"), "records")):
        apply_read(cluster, check, f"records[{i}]", records.decode(item, check, f"records[{i}]"))
    validate(cluster, check)
    return cluster, seq


def cluster_from_header(check: Checker, state: dict) -> ClusterState:
    """A cluster without nodes or topics from `header`'s dict."""
    mode = state.get("mode")
    if not isinstance(mode, str) or mode not in MODES:
        raise check.fail("mode", " or ".join(f'"{m}"' for m in MODES))
    control_port = state.get("control_port")
    if control_port is not None:
        control_port = check.integer(control_port, "control_port", low=0, high=65535)
    cluster = ClusterState(cluster_id=check.text(state.get("cluster_id"), "cluster_id"), brokers={}, mode=mode,
                           control_port=control_port)
    return cluster


def _validate_nodes(check: Checker, cluster: ClusterState) -> None:
    """At least one broker; in KRaft mode a voter, the active controller one of them (or -1);
    in zk mode no controllers, the active controller a broker; no two listeners on one port."""
    if not cluster.brokers:
        raise check.fail("brokers", "at least one registered broker (RegisterBrokerRecord)")
    if cluster.kraft:
        candidates, kind = [i for i, c in cluster.controllers.items() if c.voter], "voters"
        if not candidates:
            raise check.fail("the controllers", "at least one voter in KRaft mode (RegisterControllerRecord, VotersRecord)")
    else:
        candidates, kind = list(cluster.brokers), "brokers"
        if cluster.controllers:
            raise check.fail("the controllers", "none in zk mode (its controller is a broker)")
    if cluster.controller_id != -1 and cluster.controller_id not in candidates:
        raise check.fail("the active controller (LeaderChangeMessage)", f"-1 or one of the {kind} ({sorted(candidates)})")
    listeners = [*((f"broker {b.id}", p) for b in cluster.brokers.values() for p in [b.port, *b.listener_ports.values()]),
                 *((f"controller {c.id}", c.port) for c in cluster.controllers.values()),
                 ("the control endpoint", cluster.control_port)]
    seen: dict[int, str] = {}
    for where, port in listeners:
        if port:
            if port in seen and seen[port] != where:
                raise check.fail(f"{where}'s port", f"a port no other listener has ({seen[port]} is on {port} too)")
            seen[port] = where


def apply_read(cluster: ClusterState, check: Checker, where: str, record: Record) -> None:
    """Apply a record read from a file: one that cannot apply is damage (a StateError)."""
    try:
        replay.apply(cluster, record)
    except ReplayError as exc:
        raise StateError(f"{check.path}: {where} ({type(record).__name__}) {exc}") from None


def validate(cluster: ClusterState, check: Checker) -> None:
    """The state as a whole, after each field is read and checked on its own (types, ids and
    epochs in Kafka's int32, ports in 0..65535: `cluster_from_header`, `records.decode`): valid
    topic names, topic ids used once, in each partition replicas among the brokers, its leader,
    ISR, ELR and replica logs among its replicas, and offsets within its log (the log start and
    high watermark at most its log end, batches in order, each one's bytes saying the offsets it
    is stored at). A StateError otherwise."""
    _validate_nodes(check, cluster)
    ids: dict[uuid.UUID, str] = {}
    for t in cluster.topics.values():
        try:
            topic_lifecycle.check_topic_name(t.name)
        except topic_lifecycle.AdminError as exc:
            raise check.fail(f"topic name {t.name[:300]!r}", f"a valid topic name ({exc})") from None
        if t.id in ids:
            raise check.fail(f"topic {t.name!r} id", f"its own (topic {ids[t.id]!r} has {t.id} too)")
        ids[t.id] = t.name
        for p in t.partitions:
            where = f"topic {t.name!r} partition {p.index}"
            _validate_replicas(check, where, p, cluster)
            _validate_log(check, where, p)


def _validate_replicas(check: Checker, where: str, p: Partition, cluster: ClusterState) -> None:
    replicas = p.replicas
    if not replicas or len(set(replicas)) < len(replicas) or any(r not in cluster.brokers for r in replicas):
        raise check.fail(f"{where} replicas", f"distinct ids of known brokers ({sorted(cluster.brokers)})")
    for key in ("isr", "elr", "last_known_elr", "adding", "removing", "leo", "replica_epoch"):
        if any(r not in replicas for r in getattr(p, key)):
            raise check.fail(f"{where} {key}", f"about its replicas ({replicas}) only")
    if p.leader != -1 and p.leader not in replicas:
        raise check.fail(f"{where} leader", f"-1 or one of its replicas ({replicas})")


def _validate_log(check: Checker, where: str, p: Partition) -> None:
    previous = -1
    for b in p.batches:
        if not b.base_offset <= b.last_offset or b.base_offset <= previous:
            raise check.fail(f"{where} batch at offset {b.base_offset}",
                             f"after the one before it (ending at {previous}) and end at or after its start")
        if not _batch_says(b):
            raise check.fail(f"{where} batch at offset {b.base_offset}",
                             f"a record batch whose header says offsets {b.base_offset}-{b.last_offset}")
        previous = b.last_offset
    log_end = max([previous + 1, *p.leo.values()])
    for key in ("log_start_offset", "high_watermark"):
        value = getattr(p, key)
        if value > log_end:
            raise check.fail(f"{where} {key}", f"at most its log end offset {log_end}, not {value}")


def _batch_says(b: Batch) -> bool:
    """Whether the batch's v2 header names the offsets it is stored under, and its length."""
    if len(b.data) < BATCH_HEADER.size:
        return False
    base, length, _, magic, last_delta = BATCH_HEADER.unpack_from(b.data)
    return magic == 2 and base == b.base_offset and base + last_delta == b.last_offset \
        and length == len(b.data) - 12


# baseOffset, batchLength, partitionLeaderEpoch, magic, (crc, attributes: skipped), lastOffsetDelta
BATCH_HEADER = struct.Struct(">qiib6xi")


class Checker:
    """Type checks of values read from `path`; each failure is a StateError naming the file and
    the field (`brokers[0].port must be an integer in 0..65535`)."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, what: str) -> StateError:
        return StateError(f"{self.path}: {where} must be {what}")

    def integer(self, v: object, where: str, low: int | None = None, high: int | None = None) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or (low is not None and v < low) \
                or (high is not None and v > high) or abs(v) >= 2**63:
            span = f" in {low}..{high}" if high is not None else f" >= {low}" if low is not None else ""
            raise self.fail(where, f"an integer{span}")
        return v

    def text(self, v: object, where: str) -> str:
        if not isinstance(v, str):
            raise self.fail(where, "a string")
        return v

    def optional_text(self, v: object, where: str) -> str | None:
        return None if v is None else self.text(v, where)

    def flag(self, v: object, where: str) -> bool:
        if not isinstance(v, bool):
            raise self.fail(where, "true or false")
        return v

    def mapping(self, v: object, where: str) -> dict:
        if not isinstance(v, dict):
            raise self.fail(where, "an object")
        return v

    def array(self, v: object, where: str) -> list:
        if not isinstance(v, list):
            raise self.fail(where, "a list")
        return v

    def str_map(self, v: object, where: str) -> dict[str, str]:
        if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
            raise self.fail(where, "an object of string values")
        return dict(v)

    def int_map(self, v: object, where: str, high: int | None = None) -> dict[int, int]:
        if not isinstance(v, dict) or not all(k.isdigit() for k in v):
            raise self.fail(where, "an object from broker ids to integers")
        return {int(k): self.integer(x, f"{where}.{k}", low=0, high=high) for k, x in v.items()}

    def int_list(self, v: object, where: str) -> list[int]:
        return [self.integer(x, f"{where}[{i}]", low=0) for i, x in enumerate(self.array(v, where))]

    def uuid_of(self, v: object, where: str) -> uuid.UUID:
        try:
            return uuid.UUID(self.text(v, where))
        except ValueError:
            raise self.fail(where, "a UUID") from None


# -- arguments against the saved cluster -------------------------------------------------------


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_arguments(cluster: ClusterState, path: Path, brokers: int | None, mode: str | None,
                    controllers: int | None, port_base: int | None, listen: str | None,
                    log_dirs: int | None = None) -> None:
    """A saved cluster wins over the arguments, so arguments that disagree with it are errors
    (not silently ignored); without `listen` (which then replaces the saved hosts) it serves
    on loopback only."""
    saved = sorted(cluster.brokers.values(), key=lambda b: b.id)
    voters = sorted(cluster.controllers.values(), key=lambda c: c.id)
    nodes: list[Broker | Controller] = [*saved, *voters]
    # In `port_base` order: brokers, then controllers, then the control endpoint.
    ports = [n.port for n in nodes]
    ports += [cluster.control_port] if cluster.control_port is not None else []
    span = f"port {ports[0]}" if len(ports) == 1 else f"ports {ports[0]}-{ports[-1]}" \
        if ports == list(range(ports[0], ports[0] + len(ports))) else "ports " + ",".join(map(str, ports))
    shape = (f"KRaft cluster with {len(voters)} controller{'s' if len(voters) != 1 else ''}"
             if cluster.kraft else "zk-mode cluster")
    holds = f"{path.parent} holds a {len(saved)}-broker {shape} on {span}"
    fix = "use another --data-dir"
    for option, given, kept in (("--brokers", brokers, len(saved)), ("--mode", mode, cluster.mode),
                                ("--controllers", controllers, len(voters)),
                                ("--log-dirs-per-broker", log_dirs, max((len(b.log_dirs) or 1 for b in saved), default=1))):
        if given is not None and given != kept:
            raise StateError(f"{holds}; {option} {given} does not match: drop {option} or {fix}")
    if port_base is not None and ports != list(range(port_base, port_base + len(ports))):
        raise StateError(f"{holds}; --port-base {port_base} does not match: drop --port-base or {fix}")
    if listen is None:
        for n in nodes:
            if not is_loopback(n.host):
                role = "broker" if isinstance(n, Broker) else "controller"
                raise StateError(f"{path}: {role} {n.id} listens on {n.host}, not a loopback address: "
                                 f"pass --listen {n.host} to serve there, or {fix}")
