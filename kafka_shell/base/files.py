"""The files users bring and the files the shell writes, each way in one place.

Reading: a user's text or JSON file (a script, `--command-config`, Kafka's reassignment and
election formats) fails with one line naming the file, whatever it holds (binary bytes, JSON
nested deeper than Python's parser recurses).

Writing, two ways:
- `write_new`: a file the user names, that must not exist yet (a rollback or plan file). Opened
  with O_CREAT | O_EXCL | O_NOFOLLOW, so an existing file or any symlink there (dangling or not)
  is refused, never written through.
- `write_owned` / `write_json_owned`: files the shell owns (clusters.json, state.json, the
  throttle record), replaced whole: a temp file in the same directory, fsynced, renamed over the
  old one, mode 0600 (they may hold secrets or state). A change to what such a file holds is
  read and written under `locked`.
Files the shell owns are read with `read_owned`, which brings an existing file to 0600.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

import contextlib
import json
import os
import stat

from kafka_shell.base.errors import ShellError, UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path   # callers' paths; pathlib itself loads only where a path is made

PRIVATE = 0o600
PRIVATE_DIR = 0o700
# Scripts, property and JSON files are small; a bigger input (say /dev/zero) is a mistake.
MAX_INPUT_BYTES = 64 * 1024 * 1024


class FileExists(UsageError):
    """`write_new` found something (a file, a directory, a symlink) at the path."""


# -- reading -----------------------------------------------------------------------------------


def read_text(path: str, what: str = "") -> str:
    """A user's UTF-8 text file; a UsageError naming `what` (a script, an option) and the path
    otherwise."""
    return decode(read_bytes(path, what), f"{what} {path}" if what else path)


def read_bytes(path: str, what: str = "") -> bytes:
    """A user's file as it is (records to produce may be binary); a UsageError naming `what`
    and the path when it cannot be read."""
    named = f"{what} {path}" if what else path
    try:
        with open(os.path.expanduser(path), "rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise UsageError(f"Cannot read {named}: {getattr(exc, 'strerror', None) or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"Cannot read {named}: larger than {MAX_INPUT_BYTES // 2**20} MiB (give a smaller file)")
    return data


def decode(data: bytes, what: str) -> str:
    """UTF-8 text of `data`, or a UsageError saying where the first bad byte is."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}): "
                         "give a text file") from None


def read_json(path: str, option: str = "", hint: str = "fix the file") -> object:
    """The parsed file; a UsageError naming the file (and `option`, when given) otherwise."""
    text = read_text(path, option)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
                         f"{hint}") from None
    except RecursionError:
        raise UsageError(f"{path} nests JSON too deeply to read: {hint}") from None


def is_int(value: object) -> TypeGuard[int]:
    """A JSON integer (JSON's true and false are not partition numbers or broker ids)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_id(value: object) -> bool:
    """A JSON integer fit for a partition number or broker id: Kafka's int32, 0 or more."""
    return is_int(value) and 0 <= value <= 2**31 - 1  # type: ignore[operator]


def read_owned(path: Path) -> str | None:
    """A file the shell owns (None when there is none yet), brought to mode 0600 on the way:
    files older versions wrote 0644 may hold secrets or state."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        make_private(fd)
        return decode(fh.read(), str(path))


def make_private(fd: int) -> None:
    """Mode 0600 for an open regular file of ours that others can read or write."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
        os.fchmod(fd, PRIVATE)


# -- writing -----------------------------------------------------------------------------------


def write_new(path: Path, text: str, mode: int = 0o644) -> None:
    """Create `path` with `text`; FileExists (one line) when anything is there already, a
    symlink included, dangling or not."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise FileExists(f"{path} already exists: remove it or choose another file name") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise UsageError(f"Cannot write {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        os.unlink(path)
        raise UsageError(f"Cannot write {path}: {exc.strerror or exc}") from None


def write_owned(path: Path, text: str, mode: int = PRIVATE) -> None:
    """Replace `path` whole (temp file in the same directory, fsync, rename): readers see the
    old content or the new, never half; a symlink at `path` is replaced, not followed."""
    try:
        path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        import tempfile  # only writes pay for it
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise ShellError(f"Cannot write {path}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        os.unlink(tmp)
        if isinstance(exc, OSError):
            raise ShellError(f"Cannot write {path}: {exc.strerror or exc}") from None
        raise


def write_json_owned(path: Path, data: object) -> None:
    """`write_owned` for JSON (indented, keys sorted), mode 0600."""
    write_owned(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json_object(path: Path) -> dict:
    """A JSON object file the shell owns (`read_owned`); {} when missing or unreadable."""
    try:
        data = json.loads(read_owned(path) or "{}")
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock for a read-modify-write of a file the shell owns (a lock file beside
    it): shells that run at once (two reassignments from one machine, a script beside the REPL)
    each keep what they wrote, where the last one to write would have dropped the other's."""
    import fcntl  # only writes pay for it
    try:
        path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        lock = os.open(path.with_name(f".{path.name}.lock"),
                       os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                       PRIVATE)
    except OSError as exc:
        raise ShellError(f"Cannot write {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)   # and the lock with it


def update_json_owned(path: Path, key: str, value: object | None) -> None:
    """Set (or with None, drop) one key of a JSON object file the shell owns (`locked`): the
    file holds one per cluster."""
    with locked(path):
        data = read_json_object(path)
        if value:
            data[key] = value
        else:
            data.pop(key, None)
        write_json_owned(path, data)


def append_private(path: Path, text: str) -> None:
    """Append to a file of ours (created 0600; an existing one brought to 0600); a symlink at
    `path` is refused (OSError), never written through."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, PRIVATE)
    with os.fdopen(fd, "ab") as fh:
        make_private(fd)
        fh.write(text.encode("utf-8"))
