"""`--data-dir` durability: an append-only journal of changes on top of the state file.

A change is durable when it is acknowledged. Every response waits in `Journal.sync()` until
the changes made so far are written to `journal-<seq>.log` and fsynced; requests served in the
same loop tick share one write and one fsync (group commit), and the fsync runs off the loop
thread, so the brokers keep serving meanwhile.

What is journaled is the effect, not the request, found when a write starts:
- `cluster`: cluster id, mode, the active controller and its epoch, cluster configs, brokers,
  KRaft controllers, the control endpoint's port and the security state (ACLs, SCRAM
  credentials, client quotas), when they changed (a controller killed,
  stopped or started, a preferred controller designated: whatever moves the active one);
- `topic`: a topic's configs and every partition's replication state (no batches), for each
  topic that differs from what the journal last held (checked when `Cluster.generation` moved);
- `delete`: a topic id that is gone;
- `partition`: one partition's replication state plus the batches appended since the journal
  last held it (all of its batches, `rewrite`, when its log was truncated), for each partition
  `touched()` by an append or a DeleteRecords, or whose last batch changed.
A record is a frame: payload length and CRC32C (4 bytes each), then the payload (a kind byte,
the JSON length, the JSON and the raw batch bytes). A frame cut short by a crash, or failing its
CRC, ends the journal there: it was never fsynced, so never acknowledged.

Compaction writes the whole state to the state file when the journal passes
KAFKA_SHELL_SANDBOX_JOURNAL_BYTES (64 MiB): at a write, the state is captured and new changes go
to journal `seq + 1`; the state file (naming `seq + 1` as the first journal to replay) is
written to a temp file and renamed; then the older journals are deleted. A kill at any step
leaves the old state file with every journal it needs, or the new one with journals it skips.
"""

from __future__ import annotations

import asyncio
import bisect
import fcntl
import json
import logging
import os
import re
import struct
import uuid
from pathlib import Path
from typing import BinaryIO

from crc32c import crc32c

from kafka_shell.protocol import ProtocolError
from kafka_shell.sandbox import persist, security_state
from kafka_shell.sandbox.model import Batch, Cluster, Partition, Topic

log = logging.getLogger("kafka_shell.sandbox")

COMPACT_BYTES_ENV = "KAFKA_SHELL_SANDBOX_JOURNAL_BYTES"
COMPACT_BYTES = 64 * 1024 * 1024
SYNC_INTERVAL_S = 1.0   # changes nobody waits for (replication catch-up) are written this often
EXTRAS_KEY = "journal"
LOCK_FILE = ".lock"

FRAME = struct.Struct(">II")   # payload length, CRC32C of the payload
KIND = struct.Struct(">cI")    # record kind, length of its JSON
CLUSTER, TOPIC, DELETE, PARTITION = b"c", b"t", b"d", b"p"
NAME = re.compile(r"journal-(\d+)\.log")


def journal_path(directory: Path, seq: int) -> Path:
    return directory / f"journal-{seq}.log"


def journal_files(directory: Path) -> dict[int, Path]:
    return {int(m.group(1)): p for p in directory.iterdir() if (m := NAME.fullmatch(p.name))}


def touched(cluster: Cluster, p: Partition) -> None:
    """A partition's batches changed (an append, a DeleteRecords): journal it at the next write.
    A no-op without --data-dir."""
    journal = cluster.extras.get(EXTRAS_KEY)
    if journal is not None:
        journal.touch(p)  # type: ignore[attr-defined]


def rewritten(cluster: Cluster, p: Partition) -> None:
    """A partition's older batches were replaced (the log cleaner): journal all of its batches at
    the next write. A no-op without --data-dir."""
    journal = cluster.extras.get(EXTRAS_KEY)
    if journal is not None:
        journal.touch(p, rewrite=True)  # type: ignore[attr-defined]


def lock(data_dir: str | os.PathLike) -> int:
    """Lock the directory for this process (the OS releases it if the process dies): two
    sandboxes writing one directory would corrupt each other. Returns the lock's fd."""
    directory = Path(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise persist.StateError(f"{directory} is in use by another sandbox") from None
    return fd


class JournalError(ProtocolError):
    """The journal cannot be written: nothing more is acknowledged. A ProtocolError, so a broker
    closes the connection instead of answering (one log line, no traceback)."""


# -- recovery ---------------------------------------------------------------------------------


def recover(data_dir: str | os.PathLike) -> tuple[Cluster, int] | None:
    """The state file with every journal written after it replayed on top, and the highest
    journal number seen; None when the directory holds no state."""
    directory = Path(data_dir)
    if not directory.is_dir():
        return None
    loaded = persist.load_state(directory)
    journals = journal_files(directory)
    if loaded is None:
        if journals:
            raise persist.StateError(f"{directory} holds journals but no {persist.STATE_FILE}: "
                                     "move them away to start afresh")
        return None
    cluster, first = loaded
    for seq in sorted(journals):
        if seq >= first:
            replay(cluster, journals[seq])
    return cluster, max([first, *journals])


def replay(cluster: Cluster, path: Path) -> None:
    data = path.read_bytes()
    check = persist.Checker(path)
    pos = 0
    while pos + FRAME.size <= len(data):
        length, crc = FRAME.unpack_from(data, pos)
        payload = data[pos + FRAME.size:pos + FRAME.size + length]
        if len(payload) < length or crc32c(payload) != crc or length < KIND.size:
            break  # a write the crash cut short: never fsynced, never acknowledged
        kind, json_length = KIND.unpack_from(payload)
        try:
            record = json.loads(payload[KIND.size:KIND.size + json_length])
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise persist.StateError(f"{path}: record at byte {pos} is not valid JSON ({exc})") from None
        _apply(cluster, check, kind, check.mapping(record, f"record at byte {pos}"),
               payload[KIND.size + json_length:])
        pos += FRAME.size + length
    if pos < len(data):
        log.warning("%s: ignoring %d bytes of an unfinished write at its end", path, len(data) - pos)


def _apply(cluster: Cluster, check: persist.Checker, kind: bytes, record: dict, raw: bytes) -> None:
    if kind == CLUSTER:
        saved = persist.cluster_from_meta(check, record)
        for name in persist.CLUSTER_FIELDS:
            setattr(cluster, name, getattr(saved, name))
        security_state.copy(saved, cluster)
    elif kind == TOPIC:
        t = persist.topic_from_meta(check, record, "topic record", cluster, with_batches=False)
        old = cluster.topic_by_id(t.id)
        if old is not None:
            for p, kept in zip(t.partitions, old.partitions, strict=False):
                p.batches = kept.batches
                p.log_start_offset = max(p.log_start_offset, kept.log_start_offset)
            del cluster.topics[old.name]
        cluster.topics[t.name] = t  # replaces a deleted topic of the same name
    elif kind == DELETE:
        gone = cluster.topic_by_id(check.uuid_of(record.get("id"), "delete record id"))
        if gone is not None:
            del cluster.topics[gone.name]
    elif kind == PARTITION:
        _apply_partition(cluster, check, record, raw)
    else:
        raise persist.StateError(f"{check.path}: unknown record kind {kind!r}")


def _apply_partition(cluster: Cluster, check: persist.Checker, record: dict, raw: bytes) -> None:
    t = cluster.topic_by_id(check.uuid_of(record.get("topic_id"), "partition record topic_id"))
    fields = persist.check_partition_meta(check, check.mapping(record.get("state"), "state"), "state",
                                          cluster)
    p = t.partition(fields["index"]) if t is not None else None
    if p is None:
        raise persist.StateError(f"{check.path}: a partition record names a partition no topic "
                                 "record created")
    fields["log_start_offset"] = max(fields["log_start_offset"], p.log_start_offset)
    for key, value in fields.items():
        setattr(p, key, value)
    if check.flag(record.get("rewrite"), "rewrite"):
        p.batches = []
    pos = 0
    for i, entry in enumerate(check.array(record.get("batches"), "batches")):
        entry = check.array(entry, f"batches[{i}]")
        if len(entry) != 4:
            raise check.fail(f"batches[{i}]", "[base offset, last offset, max timestamp, size]")
        base, last, max_ts, size = (check.integer(v, f"batches[{i}]") for v in entry)
        if size < 0 or pos + size > len(raw):
            raise check.fail(f"batches[{i}] size", f"within the record's {len(raw)} bytes")
        p.batches.append(Batch(base, last, max_ts, raw[pos:pos + size]))
        pos += size
    p.batches = [b for b in p.batches if b.last_offset >= p.log_start_offset]


# -- the live journal -------------------------------------------------------------------------


class Journal:
    """The journal of one running sandbox (loop thread only, but for `open` and `close`)."""

    def __init__(self, cluster: Cluster, directory: Path, seq: int, lock_fd: int):
        self.cluster = cluster
        self.directory = directory
        self.seq = seq
        self._lock_fd = lock_fd
        self._file = open(journal_path(directory, seq), "ab")  # noqa: SIM115 - closed in close()
        persist.fsync_dir(directory)
        self.size = 0
        self.compact_bytes = int(os.environ.get(COMPACT_BYTES_ENV) or COMPACT_BYTES)
        # What the files hold, to journal only what differs.
        self._generation = cluster.generation
        self._cluster_meta = persist.cluster_meta(cluster)
        self._topics: dict[uuid.UUID, bytes] = {t.id: _json(persist.topic_meta(t))
                                                for t in cluster.topics.values()}
        self._last_batch: dict[tuple[uuid.UUID, int], Batch | None] = {
            (t.id, p.index): (p.batches[-1] if p.batches else None)
            for t in cluster.topics.values() for p in t.partitions}
        self._touched: dict[int, Partition] = {}
        # Group commit: writes are numbered; sync() waits for the one holding its changes.
        self._captured = 0
        self._durable = 0
        self._progress: asyncio.Event | None = None
        self._writer: asyncio.Task | None = None
        self._compaction: asyncio.Future | None = None
        self._failed: BaseException | None = None
        cluster.extras[EXTRAS_KEY] = self

    @classmethod
    def open(cls, cluster: Cluster, data_dir: str | os.PathLike, seq: int, lock_fd: int) -> Journal:
        """Drop stale temp files, write the state file and start a new journal after `seq`
        (journals before it are deleted). `lock_fd` is `lock(data_dir)`'s, released by close()."""
        directory = Path(data_dir)
        for path in persist.remove_temp_files(directory):
            log.info("removed %s, left by an interrupted save", path)
        seq += 1
        _write_state(directory, persist.state_of(cluster, seq), pausable=False)
        return cls(cluster, directory, seq, lock_fd)

    # -- group commit ----------------------------------------------------------------------

    def touch(self, p: Partition, rewrite: bool = False) -> None:
        self._touched[id(p)] = p  # written by the sync() of the request that touched it
        t = self.cluster.topics.get(p.topic)
        if rewrite and t is not None:
            self._last_batch[(t.id, p.index)] = None   # no batch known: all of them are written

    def _pending(self) -> bool:
        return bool(self._touched) or self.cluster.generation != self._generation

    async def sync(self) -> None:
        """Return once every change made so far is on disk (fsynced)."""
        self._check_failed()
        target = self._captured
        if self._pending():
            target += 1  # the next write captures them
            self._start_writer()
        while self._durable < target:
            if self._progress is None:
                self._progress = asyncio.Event()
            await self._progress.wait()
            self._check_failed()

    def _check_failed(self) -> None:
        if self._failed is not None:
            raise JournalError(f"the journal in {self.directory} cannot be written: {self._failed}")

    def _start_writer(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_loop())

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending() and self._failed is None:
            await asyncio.sleep(0)  # the requests of this loop tick join this write
            self._captured += 1
            file, state = self._file, None
            try:
                data = self._capture()
                self.size += len(data)
                if self.size >= self.compact_bytes and self._compaction is None:
                    # The state now is the old journals' end: later changes go to the next one.
                    self.seq += 1
                    state = persist.state_of(self.cluster, self.seq)
                    self._file = open(journal_path(self.directory, self.seq), "ab")  # noqa: SIM115
                    self.size = 0
                await loop.run_in_executor(None, _append, file, data,
                                           self.directory if state is not None else None)
            except Exception as exc:  # noqa: BLE001 - a full disk (or a bug) fails the waiting requests
                self._failed = exc
                log.error("cannot write the journal in %s: %s; nothing more is acknowledged",
                          self.directory, exc)
            self._durable = self._captured
            if self._progress is not None:
                self._progress.set()
                self._progress = None
            if state is not None and self._failed is None:
                self._compaction = loop.create_task(self._compact(file, state))

    # -- what changed ----------------------------------------------------------------------

    def _capture(self) -> bytes:
        """The records that bring the files up to the state now (loop thread)."""
        cluster = self.cluster
        out = bytearray()
        if cluster.generation != self._generation:
            self._generation = cluster.generation
            meta = persist.cluster_meta(cluster)
            if meta != self._cluster_meta:
                out += _frame(CLUSTER, meta)
                self._cluster_meta = meta
            live = {t.id for t in cluster.topics.values()}
            for gone in [i for i in self._topics if i not in live]:
                out += _frame(DELETE, {"id": str(gone)})
                del self._topics[gone]
                for key in [k for k in self._last_batch if k[0] == gone]:
                    del self._last_batch[key]
            for t in cluster.topics.values():
                blob = _json(persist.topic_meta(t))
                if self._topics.get(t.id) != blob:
                    out += _frame_json(TOPIC, blob)
                    self._topics[t.id] = blob
                for p in t.partitions:  # truncated by an election, or new
                    last = p.batches[-1] if p.batches else None
                    if last is not self._last_batch.get((t.id, p.index)):
                        self._touched[id(p)] = p
        for p in self._touched.values():
            holder = cluster.topics.get(p.topic)
            if holder is not None and holder.partition(p.index) is p:  # not deleted since
                out += self._partition_record(holder, p)
        self._touched.clear()
        return bytes(out)

    def _partition_record(self, t: Topic, p: Partition) -> bytes:
        key = (t.id, p.index)
        last = self._last_batch.get(key)
        new, rewrite = p.batches, True
        if last is not None:
            i = bisect.bisect_left(p.batches, last.base_offset, key=lambda b: b.base_offset)
            if i < len(p.batches) and p.batches[i] is last:
                new, rewrite = p.batches[i + 1:], False
        self._last_batch[key] = p.batches[-1] if p.batches else None
        self._topics[t.id] = b""  # its partition changed: the next topic check rewrites it
        record = {"topic_id": str(t.id), "state": persist.partition_meta(p), "rewrite": rewrite,
                  "batches": [[b.base_offset, b.last_offset, b.max_timestamp, len(b.data)] for b in new]}
        return _frame(PARTITION, record, b"".join(b.data for b in new))

    # -- compaction ------------------------------------------------------------------------

    async def _compact(self, old_journal: BinaryIO, state: dict) -> None:
        """Write `state` (the end of `old_journal` and those before it) as the state file and
        delete those journals. Off the loop thread; writes go on to the next journal meanwhile."""
        def compact() -> None:
            old_journal.close()
            _write_state(self.directory, state)
        try:
            await asyncio.get_running_loop().run_in_executor(None, compact)
        except OSError as exc:
            log.error("cannot compact the journal in %s: %s", self.directory, exc)
        finally:
            self._compaction = None

    async def close(self) -> None:
        """Write what is pending, then the whole state (a clean stop), and release the directory."""
        try:
            if self._failed is None:
                await self.sync()
            if self._compaction is not None:
                await asyncio.shield(self._compaction)
            if self._failed is None:
                state = persist.state_of(self.cluster, self.seq + 1)
                self._file.close()
                await asyncio.get_running_loop().run_in_executor(None, _write_state, self.directory, state)
        finally:
            self._file.close()
            self.cluster.extras.pop(EXTRAS_KEY, None)
            os.close(self._lock_fd)

    async def run_periodic(self) -> None:
        """Journal changes no request waits for (replication catch-up, elections it causes)."""
        while True:
            await asyncio.sleep(SYNC_INTERVAL_S)
            if self._pending():
                self._start_writer()


def _append(file: BinaryIO, data: bytes, new_journal_in: Path | None) -> None:
    if data:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    if new_journal_in is not None:  # a journal created for the writes after these: make it last
        persist.fsync_dir(new_journal_in)


def _write_state(directory: Path, state: dict, pausable: bool = True) -> None:
    """Write the state file, then delete the journals it holds (those before its `journal`)."""
    persist.write(state, directory, pausable)
    for n, path in journal_files(directory).items():
        if n < state["journal"]:
            path.unlink(missing_ok=True)


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _frame(kind: bytes, record: object, raw: bytes = b"") -> bytes:
    return _frame_json(kind, _json(record), raw)


def _frame_json(kind: bytes, blob: bytes, raw: bytes = b"") -> bytes:
    payload = KIND.pack(kind, len(blob)) + blob + raw
    return FRAME.pack(len(payload), crc32c(payload)) + payload
