"""`--data-dir` durability: an append-only journal of the records applied, on top of the state file.

A change is durable when it is acknowledged. Every response waits in `Journal.sync()` until
the changes made so far are written to `journal-<seq>.log` and fsynced; requests served in the
same loop tick share one write and one fsync (group commit), and the fsync runs off the loop
thread, so the brokers keep serving meanwhile.

What is journaled is what `replay.apply` applied (`append`): each state change is a record
(records.py), and start-up applies them again through the same function. Beside them, the
partitions whose logs changed (an append, a follower's progress, a truncation, DeleteRecords,
retention, the cleaner: `log.py` says so) are written as `PartitionLogs`: their log state and
the batches appended since the journal last held them (all of them, `rewrite`, when older ones
were replaced). One write is one entry: the records and logs it holds are replayed whole or not
at all. The coordinators' state is their records too, applied through the same `apply`: the
group coordinator's (group_state.py: OffsetCommitRecord, GroupMetadataRecord, the
ConsumerGroup*, StreamsGroup* and ShareGroup* records), the share coordinator's
(ShareSnapshotRecord, ShareUpdateRecord) and the transaction coordinator's
(TransactionLogRecord, transactions.py).

A journal file starts with FILE_HEADER ("kafka-shell journal 4" and a newline); each entry is
a 16-byte header (ENTRY: the MARKER, the payload's length, the payload's CRC32C, and the CRC32C
of those 12 bytes) and the payload (a kind byte, the JSON length, the JSON: a list of records,
and the raw batch bytes its PartitionLogs name in order). Start-up (`recover`, through `scan`)
replays the entries up to the first bad one, and:
- a bad entry that is only the end of the file cut short (a header or payload running past the
  end, or zeros where the file grew and the data never landed), after a whole file header, is a
  torn write: a crash cut it short before its fsync, so it was never acknowledged, unless the
  file was cut later; it is dropped after the journal is copied into a `damaged-<time>`
  directory, with one warning;
- a bad entry followed by good ones, or a bad checksum in a complete entry, is damage: start-up
  refuses (a StateError naming the file, the byte offset and how many entries follow) and
  leaves every file as it is; `repair` truncates the journal there after copying it (and
  setting later journals aside) into a `damaged-<time>` directory.
The header's own checksum tells a damaged length from a torn write; the marker lets the scan
find the entries after damage. A journal of an older format (3, with groups as views of their
own; 2, with the state changes as snapshots of what changed; 1, without a file header) is
refused in one line.

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
import shutil
import struct
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from crc32c import crc32c

from kafka_shell.protocol.codec import ProtocolError
from kafka_shell.sandbox import log as logs, persist, records, replay
from kafka_shell.sandbox.model import Batch, ClusterState, Partition
from kafka_shell.sandbox.records import Record, RemoveTopicRecord, ReplayError

log = logging.getLogger("kafka_shell.sandbox")

COMPACT_BYTES_ENV = "KAFKA_SHELL_SANDBOX_JOURNAL_BYTES"
COMPACT_BYTES = 64 * 1024 * 1024
SYNC_INTERVAL_S = 1.0   # changes nobody waits for (replication catch-up) are written this often
LOCK_FILE = ".lock"

FORMAT = 4
HEADER_PREFIX = b"kafka-shell journal "
FILE_HEADER = HEADER_PREFIX + b"%d\n" % FORMAT
MARKER = b"\xd7KSJ"
ENTRY = struct.Struct(">4sIII")   # MARKER, payload length, CRC32C of the payload, CRC32C of the 12 bytes before
KIND = struct.Struct(">cI")       # entry kind, length of its JSON
FORMAT_1 = struct.Struct(">II")   # format 1's entries: payload length, CRC32C of the payload
DAMAGED_PREFIX = "damaged-"
RECORDS = b"r"   # a list of records (and the batch bytes of its PartitionLogs)
NAME = re.compile(r"journal-(\d+)\.log")


def journal_path(directory: Path, seq: int) -> Path:
    return directory / f"journal-{seq}.log"


def journal_seq(path: Path) -> int:
    m = NAME.fullmatch(path.name)
    assert m is not None, f"{path} is not a journal"
    return int(m.group(1))


def journal_files(directory: Path) -> dict[int, Path]:
    return {int(m.group(1)): p for p in directory.iterdir() if (m := NAME.fullmatch(p.name))}


def lock(data_dir: str | os.PathLike) -> int:
    """Lock the directory for this process (the OS releases it if the process dies): two
    sandboxes writing one directory would corrupt each other. Returns the lock's fd. The
    directory and what it holds are made private (0700, 0600): they hold SCRAM keys, TLS keys
    and every record."""
    directory = Path(data_dir)
    persist.make_private_dir(directory)
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


# -- reading: entries, torn writes and damage --------------------------------------------------

GOOD, PARTIAL, BAD = "good", "partial", "bad"


@dataclass
class Scan:
    """What `scan` found in one journal file."""
    entries: list[tuple[int, bytes]]   # (byte offset, payload) of the good entries before any bad one
    end: int                           # where they end: the damage or the torn write starts here
    size: int                          # the file's size
    torn: bool = False                 # end..size is a write a crash cut short
    damaged: bool = False              # end..size starts with damage
    following: int = 0                 # good entries after the damage
    older_format: int | None = None    # a journal of an older format (not read)


def scan(data: bytes) -> Scan:
    """The entries of a journal file's bytes, and what follows the first bad one (see the module
    doc: a torn write or damage)."""
    if not (data.startswith(FILE_HEADER) or FILE_HEADER.startswith(data)):
        older = _older_format(data)
        if older is not None:
            return Scan([], 0, len(data), older_format=older)
        # No journal header: its header damaged (good entries after it), or no journal at all
        # (random bytes, another file): never a write cut short.
        return Scan([], 0, len(data), damaged=True, following=_count_good(data, 0))
    pos = len(FILE_HEADER)
    if len(data) < pos:  # the file header itself cut short: an empty journal
        return Scan([], 0, len(data), torn=bool(data))
    entries = []
    while pos < len(data):
        state, start, end = _entry(data, pos)
        if state != GOOD:
            break
        entries.append((pos, data[start:end]))
        pos = end
    else:
        return Scan(entries, pos, len(data))
    following = _count_good(data, end if state == BAD and end > pos + 1 else pos + 1)
    zeros = data.count(0, pos) == len(data) - pos  # the file grew, the data never landed
    torn = not following and (state == PARTIAL or (state == BAD and end == pos + 1 and zeros))
    return Scan(entries, pos, len(data), torn=torn, damaged=not torn, following=following)


def _older_format(data: bytes) -> int | None:
    """The format of a journal an older kafka-shell wrote: its header line's number, or 1 (no
    header, a whole first entry of format 1); None for anything else."""
    line = data[:len(HEADER_PREFIX) + 4].split(b"\n")[0]
    if line.startswith(HEADER_PREFIX) and line[len(HEADER_PREFIX):].isdigit():
        return int(line[len(HEADER_PREFIX):])
    if len(data) >= FORMAT_1.size:
        length, crc = FORMAT_1.unpack_from(data)
        if KIND.size <= length <= len(data) - FORMAT_1.size and crc32c(data[8:8 + length]) == crc:
            return 1
    return None


def _entry(data: bytes, pos: int) -> tuple[str, int, int]:
    """(GOOD, PARTIAL or BAD, payload start, end) of the entry at `pos`. A BAD header has no
    known end: it is reported as pos + 1."""
    if len(data) - pos < ENTRY.size:
        return PARTIAL, pos, len(data)
    marker, length, crc, header_crc = ENTRY.unpack_from(data, pos)
    if marker != MARKER or crc32c(data[pos:pos + ENTRY.size - 4]) != header_crc:
        return BAD, pos, pos + 1
    start = pos + ENTRY.size
    end = start + length
    if end > len(data):
        return PARTIAL, start, len(data)
    if crc32c(data[start:end]) != crc or length < KIND.size:
        return BAD, start, end
    return GOOD, start, end


def _next_good(data: bytes, pos: int) -> int | None:
    """Where the next good entry at or after `pos` starts (found by its marker), or None."""
    while (found := data.find(MARKER, pos)) >= 0:
        if _entry(data, found)[0] == GOOD:
            return found
        pos = found + 1
    return None


def _count_good(data: bytes, pos: int) -> int:
    """Good entries from `pos` on, searching past bad bytes for their marker."""
    count = 0
    while pos < len(data):
        found = _next_good(data, pos)
        if found is None:
            break
        count += 1
        pos = _entry(data, found)[2]
    return count


def _damage(found: list[tuple[Path, Scan]]) -> tuple[Path, Scan, int] | None:
    """The first damaged journal of `found` (in replay order), its scan, and the good entries of
    the journals after it."""
    for k, (path, result) in enumerate(found):
        if result.damaged or (result.torn and k < len(found) - 1):  # a torn write is only ever last
            later = sum(len(r.entries) + r.following for _, r in found[k + 1:])
            return path, result, later
    return None


# -- recovery ---------------------------------------------------------------------------------


def recover(data_dir: str | os.PathLike) -> tuple[ClusterState, int] | None:
    """The state file with every journal written after it replayed on top, and the highest
    journal number seen; None when the directory holds no state. Damage in a journal raises a
    StateError and changes no file."""
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
    found = _scan_journals(directory, first)
    for path, result in found:
        if result.older_format is not None:
            raise persist.StateError(
                f"{path} is a journal of format {result.older_format} (an older kafka-shell's); this sandbox "
                f"reads format {FORMAT}: serve {directory} with the kafka-shell that wrote it, or move it away "
                "to start afresh")
    damage = _damage(found)
    if damage is not None:
        path, result, later = damage
        more = f" and {later} in later journals" if later else ""
        raise persist.StateError(
            f"{path} is damaged at byte {result.end} ({result.following} entries follow it{more}); "
            f"nothing was changed: to start from the entries before it, run kafka-shell sandbox "
            f"--data-dir {directory} --repair (it keeps a copy of what it cuts)")
    for path, result in found:
        replay_journal(cluster, path, result)
        persist.validate(cluster, persist.Checker(path))  # what the journal made of the state
        if result.torn:
            # A crash during a write leaves it unacknowledged, but a file cut later (a disk, a
            # person) may have lost acknowledged records: the start-up cuts nothing it does not copy.
            keep = _damaged_dir(directory)
            _copy_into(keep, path)
            log.warning("%s: dropped its last entry, cut short at byte %d (%d bytes; it may have been "
                        "acknowledged); the journal as it was is kept in %s",
                        path, result.end, result.size - result.end, keep)
    return cluster, max([first, *journals])


def _damaged_dir(directory: Path) -> Path:
    """A new, private D/damaged-<time>-<suffix>/ for copies of what start-up or --repair cuts."""
    return Path(tempfile.mkdtemp(prefix=f"{DAMAGED_PREFIX}{time.strftime('%Y%m%d-%H%M%S')}-", dir=directory))


def _copy_into(keep: Path, path: Path) -> None:
    """Copy a journal into `keep`, fsynced, its owner's alone."""
    copy = os.open(keep / path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with open(path, "rb") as src, os.fdopen(copy, "wb") as dst:
        shutil.copyfileobj(src, dst)
        dst.flush()
        os.fsync(dst.fileno())
    persist.fsync_dir(keep)


def _scan_journals(directory: Path, first: int) -> list[tuple[Path, Scan]]:
    """The journals to replay on a state file naming `first`, in order, each scanned."""
    journals = journal_files(directory)
    return [(journals[seq], scan(journals[seq].read_bytes())) for seq in sorted(journals) if seq >= first]


def replay_journal(cluster: ClusterState, path: Path, result: Scan) -> None:
    check = persist.Checker(path)
    for pos, payload in result.entries:
        kind, json_length = KIND.unpack_from(payload)
        try:
            data = json.loads(payload[KIND.size:KIND.size + json_length])
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise persist.StateError(f"{path}: the entry at byte {pos} is not valid JSON ({exc})") from None
        raw = memoryview(payload)[KIND.size + json_length:]
        if kind != RECORDS:
            raise persist.StateError(f"{path}: unknown entry kind {kind!r} at byte {pos}")
        where = f"the entry at byte {pos}"
        for i, record in enumerate(records.decode_all(check.array(data, where), check, where, raw)):
            apply_read(cluster, check, f"{where}: records[{i}]", record)


def apply_read(cluster: ClusterState, check: persist.Checker, where: str, record: Record) -> None:
    """Apply a record read from a file: one that cannot apply is damage (a StateError)."""
    try:
        replay.apply(cluster, record)
    except ReplayError as exc:
        raise persist.StateError(f"{check.path}: {where} ({type(record).__name__}) {exc}") from None


def repair(data_dir: str | os.PathLike) -> str:
    """`kafka-shell sandbox --data-dir D --repair`: truncate the first damaged journal at its
    damage, after copying it (and moving the journals after it, which build on what is cut) into
    D/damaged-<time>/. Returns the line that says what was done."""
    directory = Path(data_dir)
    if not (directory / persist.STATE_FILE).exists():
        raise persist.StateError(f"{directory} holds no sandbox state ({persist.STATE_FILE}): nothing to repair")
    lock_fd = lock(directory)
    try:
        loaded = persist.load_state(directory)
        assert loaded is not None, "the state file exists"
        found = _scan_journals(directory, loaded[1])
        damage = _damage(found)
        if damage is None:
            return f"{directory}: nothing to repair (every journal is whole)"
        path, result, _ = damage
        later = [p for p, _ in found if journal_seq(p) > journal_seq(path)]
        keep = _damaged_dir(directory)
        _copy_into(keep, path)
        for p in later:
            os.replace(p, keep / p.name)
        persist.fsync_dir(keep)
        os.truncate(path, result.end)
        with open(path, "rb+") as f:
            os.fsync(f.fileno())
        persist.fsync_dir(directory)
        aside = f" and {len(later)} later journal{'s' if len(later) != 1 else ''}" if later else ""
        return (f"{path}: truncated at byte {result.end}, dropping {result.following + 1} entries "
                f"({result.size - result.end} bytes){aside}; the damaged journals are kept in {keep}")
    finally:
        os.close(lock_fd)


# -- the live journal -------------------------------------------------------------------------


class Journal:
    """The journal of one running sandbox (loop thread only, but for `open` and `close`)."""

    def __init__(self, cluster: ClusterState, directory: Path, seq: int, lock_fd: int):
        self.cluster = cluster
        self.directory = directory
        self.seq = seq
        self._lock_fd = lock_fd
        self._file = _new_journal(journal_path(directory, seq))
        persist.fsync_dir(directory)
        self.size = 0
        self._fresh = True  # the next write to self._file starts with FILE_HEADER
        self.compact_bytes = int(os.environ.get(COMPACT_BYTES_ENV) or COMPACT_BYTES)
        # What was applied since the last write, and the partitions whose logs changed.
        self._records: list[Record] = []
        self._logs: dict[int, Partition] = {}
        # The last batch the files hold of each partition (None: none known, all are written).
        self._last_batch: dict[tuple[uuid.UUID, int], Batch | None] = {
            (t.id, p.index): (p.batches[-1] if p.batches else None)
            for t in cluster.topics.values() for p in t.partitions}
        # Group commit: writes are numbered; sync() waits for the one holding its changes.
        self._captured = 0
        self._durable = 0
        self._progress: asyncio.Event | None = None
        self._writer: asyncio.Task | None = None
        self._compaction: asyncio.Future | None = None
        self._failed: BaseException | None = None
        cluster.runtime.journal = self

    @classmethod
    def open(cls, cluster: ClusterState, data_dir: str | os.PathLike, seq: int, lock_fd: int) -> Journal:
        """Drop stale temp files, write the state file and start a new journal after `seq`
        (journals before it are deleted). `lock_fd` is `lock(data_dir)`'s, released by close()."""
        directory = Path(data_dir)
        for path in persist.remove_temp_files(directory):
            log.info("removed %s, left by an interrupted save", path)
        seq += 1
        _write_state(directory, persist.state_of(cluster, seq), pausable=False)
        return cls(cluster, directory, seq, lock_fd)

    # -- what changed ----------------------------------------------------------------------

    def append(self, record: Record) -> None:
        """A record applied (replay.apply): written by the sync() of the request that made it."""
        self._records.append(record)
        if isinstance(record, RemoveTopicRecord):
            for key in [k for k in self._last_batch if k[0] == record.topic_id]:
                del self._last_batch[key]

    def logs_changed(self, p: Partition, rewrite: bool) -> None:
        """A partition's logs changed (log.py): written with the next write."""
        self._logs[id(p)] = p
        if rewrite:
            t = self.cluster.topics.get(p.topic)
            if t is not None:
                self._last_batch[(t.id, p.index)] = None   # no batch known: all of them are written

    def _pending(self) -> bool:
        return bool(self._records) or bool(self._logs)

    # -- group commit ----------------------------------------------------------------------

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
                if data and self._fresh:
                    data, self._fresh = FILE_HEADER + data, False
                self.size += len(data)
                if self.size >= self.compact_bytes and self._compaction is None:
                    # The state now is the old journals' end: later changes go to the next one.
                    self.seq += 1
                    state = persist.state_of(self.cluster, self.seq)
                    self._file = _new_journal(journal_path(self.directory, self.seq))
                    self.size, self._fresh = 0, True
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

    def _capture(self) -> bytes:
        """The entry that brings the files up to the state now (loop thread)."""
        cluster = self.cluster
        raw = bytearray()
        items = [records.encode(r) for r in self._records]
        self._records = []
        for p in self._logs.values():
            t = cluster.topics.get(p.topic)
            if t is not None and t.partition(p.index) is p:  # not deleted since
                items.append(records.encode(self._logs_record(p), raw))
        self._logs.clear()
        return _frame(RECORDS, items, bytes(raw)) if items else b""

    def _logs_record(self, p: Partition) -> records.PartitionLogs:
        """The partition's logs, with the batches after the last one the files hold (all of them
        when that one is gone: the log was truncated or cleaned)."""
        t = self.cluster.topics[p.topic]
        key = (t.id, p.index)
        last = self._last_batch.get(key)
        new, rewrite = p.batches, True
        if last is not None:
            i = bisect.bisect_left(p.batches, last.base_offset, key=lambda b: b.base_offset)
            if i < len(p.batches) and p.batches[i] is last:
                new, rewrite = p.batches[i + 1:], False
        self._last_batch[key] = p.batches[-1] if p.batches else None
        return logs.logs_record(self.cluster, p, new, rewrite)

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
            self.cluster.runtime.journal = None
            os.close(self._lock_fd)

    async def run_periodic(self) -> None:
        """Journal changes no request waits for (replication catch-up, elections it causes)."""
        while True:
            await asyncio.sleep(SYNC_INTERVAL_S)
            if self._pending():
                self._start_writer()


def _new_journal(path: Path) -> BinaryIO:
    """A journal file to append to, its owner's alone (it holds SCRAM keys and every record)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "ab")


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
    blob = _json(record)
    payload = KIND.pack(kind, len(blob)) + blob + raw
    head = MARKER + struct.pack(">II", len(payload), crc32c(payload))
    return head + struct.pack(">I", crc32c(head)) + payload
