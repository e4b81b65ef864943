"""The journal's entries carry a length and checksums: a write a crash cut short is dropped
(and said), damage refuses start with the file untouched, and `--repair` truncates at the damage
after keeping a copy. Everything the sandbox writes under --data-dir is its owner's alone.

The journals are taken from a running sandbox (`_crash_copy`: what a kill -9 at that moment
would leave) and damaged here; start-up runs `kafka-shell sandbox` as a user would."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from kafka_shell.sandbox import journal
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.test_data_dir import (_comparable, _crash_copy, _refused, create_topics_rf1, kill9, produce,
                                         read_all, serve)
from tests.test_oneshot import SHELL


def _journal_with_entries(tmp_path: Path, writes: int = 20) -> tuple[Path, Path, dict]:
    """A crashed copy of a data directory whose journal holds many entries, the journal's path
    and the state the sandbox had."""
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data)) as s:
        create_topics_rf1(s.bootstrap, ["a"])
        for k in range(writes):  # one flush each: one journal write (or more) each
            produce(s.bootstrap, ["a"], 5, first=k * 5)
        crashed = _crash_copy(data, tmp_path / "crashed")
        live = s.call(_comparable, s.cluster)
    (path,) = journal.journal_files(crashed).values()
    return crashed, path, live


def _entry_offsets(path: Path) -> list[int]:
    return [offset for offset, _ in journal.scan(path.read_bytes()).entries]


def _listing(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())
            if p.is_file() and p.name != journal.LOCK_FILE}


def _flip(path: Path, offset: int, count: int = 8) -> None:
    data = bytearray(path.read_bytes())
    for i in range(offset, offset + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _serves(data_dir: Path) -> str:
    """Start `kafka-shell sandbox` on the directory, kill it once it serves; its stderr so far."""
    proc = subprocess.Popen([*SHELL, "sandbox", "--data-dir", str(data_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    if not first.startswith("bootstrap.servers="):
        proc.kill()
        pytest.fail(f"the sandbox did not start: {proc.communicate()[1]}")
    proc.kill()
    _, err = proc.communicate(10)
    return err


def test_damage_followed_by_good_entries_refuses_start_and_keeps_every_file(tmp_path):
    crashed, path, _ = _journal_with_entries(tmp_path)
    offsets = _entry_offsets(path)
    assert len(offsets) > 10
    assert offsets[0] == len(journal.FILE_HEADER) < 28
    _flip(path, 20)  # the issue's case: eight bytes at offset 20, the file header's end and the first entry's start
    before = _listing(crashed)
    line = _refused(crashed)
    assert line.startswith(f"{path} is damaged at byte 0 ({len(offsets) - 1} entries follow it)")
    assert f"kafka-shell sandbox --data-dir {crashed} --repair" in line
    assert _listing(crashed) == before  # nothing deleted, nothing rewritten


def test_damage_in_the_middle_names_its_entry(tmp_path):
    crashed, path, _ = _journal_with_entries(tmp_path)
    offsets = _entry_offsets(path)
    middle = offsets[len(offsets) // 2]
    _flip(path, middle + 40)  # inside its payload: the checksum no longer matches
    line = _refused(crashed)
    assert f"is damaged at byte {middle} ({len(offsets) - len(offsets) // 2 - 1} entries follow it)" in line


def test_a_bad_checksum_in_a_complete_last_entry_is_damage(tmp_path):
    crashed, path, _ = _journal_with_entries(tmp_path, writes=3)
    last = _entry_offsets(path)[-1]
    _flip(path, path.stat().st_size - 3, count=1)  # the last byte but two: its payload
    before = _listing(crashed)
    assert f"{path} is damaged at byte {last} (0 entries follow it)" in _refused(crashed)
    assert _listing(crashed) == before


def test_a_damaged_length_is_not_taken_for_a_torn_write(tmp_path):
    crashed, path, _ = _journal_with_entries(tmp_path)
    offsets = _entry_offsets(path)
    _flip(path, offsets[3] + 4, count=2)  # the length of the fourth entry: it seems to run past the end
    assert f"is damaged at byte {offsets[3]} ({len(offsets) - 4} entries follow it)" in _refused(crashed)


@pytest.mark.parametrize("tail", [
    "half an entry",        # a header, then part of its payload
    "part of a header",
    "zeros",                # the file grew, the data never landed
])
def test_a_torn_write_at_the_end_is_dropped_and_said(tmp_path, tail):
    crashed, path, live = _journal_with_entries(tmp_path, writes=3)
    whole = path.read_bytes()
    entry = whole[_entry_offsets(path)[-1]:]  # a whole entry, written again as the torn one
    torn = {"half an entry": entry[:len(entry) // 2], "part of a header": entry[:7],
            "zeros": b"\0" * 300}[tail]
    with open(path, "ab") as f:
        f.write(torn)
    cut = path.read_bytes()
    recovered, _ = journal.recover(crashed)
    assert _comparable(recovered) == live
    err = _serves(crashed)
    said = f"{path}: dropped its last entry, cut short at byte {len(whole)} ({len(torn)} bytes; it may have " \
           "been acknowledged); the journal as it was is kept in "
    assert said in err
    copy_dir = Path(err.split(said, 1)[1].split()[0])
    assert (copy_dir / path.name).read_bytes() == cut   # kept before the start-up deleted it
    assert _modes(copy_dir) == {".": "0o700", path.name: "0o600"}


@pytest.mark.parametrize("size", [100, 50_000])
def test_a_journal_of_random_bytes_is_damage_not_a_torn_write(tmp_path, size):
    """A file with no whole journal header (nor, in format 1, a whole first entry) is no journal
    cut short: start-up refuses it as any damage, and every file stays."""
    crashed, path, _ = _journal_with_entries(tmp_path, writes=2)
    path.write_bytes(os.urandom(size).replace(journal.MARKER, b"XXXX"))
    before = _listing(crashed)
    assert _refused(crashed).startswith(f"{path} is damaged at byte 0 (0 entries follow it)")
    assert _listing(crashed) == before


def test_repair_truncates_at_the_damage_after_keeping_a_copy(tmp_path):
    crashed, path, _ = _journal_with_entries(tmp_path)
    offsets = _entry_offsets(path)
    damaged_at = offsets[5]
    _flip(path, damaged_at + 30)
    original = path.read_bytes()
    p = subprocess.run([*SHELL, "sandbox", "--data-dir", str(crashed), "--repair"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    (line,) = p.stderr.strip().splitlines()
    (copy_dir,) = [d for d in crashed.iterdir() if d.is_dir()]
    assert line == (f"{path}: truncated at byte {damaged_at}, dropping {len(offsets) - 5} entries "
                    f"({len(original) - damaged_at} bytes); the damaged journals are kept in {copy_dir}")
    assert (copy_dir / path.name).read_bytes() == original
    assert _modes(copy_dir) == {".": "0o700", path.name: "0o600"}  # the copy holds what the journal held
    assert path.read_bytes() == original[:damaged_at]
    # Now it starts, with the entries before the damage.
    proc, bootstrap = serve(crashed)
    try:
        assert len(read_all(bootstrap, ["a"])) > 0
    finally:
        kill9(proc)


def test_repair_sets_later_journals_aside(tmp_path):
    crashed, path, _ = _journal_with_entries(tmp_path, writes=4)
    later = journal.journal_path(crashed, int(path.stem.split("-")[1]) + 1)
    later.write_bytes(path.read_bytes())  # the next journal, as a compaction leaves it
    _flip(path, _entry_offsets(path)[1] + 30)
    line = _refused(crashed)
    assert "entries follow it" in line and f"and {len(_entry_offsets(later))} in later journals" in line
    p = subprocess.run([*SHELL, "sandbox", "--data-dir", str(crashed), "--repair"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    (copy_dir,) = [d for d in crashed.iterdir() if d.is_dir()]
    assert not later.exists() and (copy_dir / later.name).exists()
    assert "1 later journal" in p.stderr


def test_repair_of_a_whole_journal_changes_nothing(tmp_path):
    crashed, path, _ = _journal_with_entries(tmp_path, writes=2)
    before = _listing(crashed)
    p = subprocess.run([*SHELL, "sandbox", "--data-dir", str(crashed), "--repair"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stderr.strip() == f"{crashed}: nothing to repair (every journal is whole)"
    assert _listing(crashed) == before


def test_repair_takes_no_other_option(tmp_path):
    line = _refused(tmp_path, "--repair", "--brokers", "3")
    assert "--repair" in line


# -- everything under --data-dir is private ----------------------------------------------------


def _modes(directory: Path) -> dict[str, str]:
    """Relative path -> octal mode of the directory and everything under it."""
    out = {".": oct(stat.S_IMODE(directory.stat().st_mode))}
    for root, dirs, files in os.walk(directory):
        for name in [*dirs, *files]:
            p = Path(root) / name
            out[str(p.relative_to(directory))] = oct(stat.S_IMODE(p.lstat().st_mode))
    return out


def test_everything_the_sandbox_writes_under_its_data_dir_is_private(tmp_path):
    data = tmp_path / "data"
    proc = subprocess.Popen([*SHELL, "sandbox", "--brokers", "1", "--data-dir", str(data), "--listeners",
                             "PLAINTEXT,SASL_SSL", "--user", "alice:${ALICE_PW}"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "ALICE_PW": "pw"})
    try:
        bootstrap = proc.stdout.readline().strip().split("=", 1)[1]
        create_topics_rf1(bootstrap, ["a"])
        produce(bootstrap, ["a"], 20)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        upsert = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"pw")
        for f in admin.alter_user_scram_credentials([upsert]).values():
            f.result(10)
        running = _modes(data)  # journal, state, lock, TLS material
    finally:
        kill9(proc)
    assert any(name.startswith("journal-") for name in running) and "tls/ca.key" in running
    for name, mode in running.items():
        assert mode == ("0o700" if (data / name).is_dir() else "0o600"), f"{name} is {mode}"
    # A data directory made by an older version (0755, 0644) is brought to 0700/0600 on start.
    os.chmod(data, 0o755)
    for p in data.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    proc, _ = serve(data)
    kill9(proc)
    assert set(_modes(data).values()) <= {"0o700", "0o600"}


@pytest.mark.parametrize("data, torn", [(b"", False), (journal.FILE_HEADER[:5], True), (journal.FILE_HEADER, False)])
def test_a_journal_cut_in_its_file_header_is_empty(data, torn):
    result = journal.scan(data)
    assert (result.entries, result.end, result.torn, result.damaged) == ([], 0 if torn else len(data), torn, False)


@pytest.mark.parametrize("where", ["offset 20", "its middle"])
def test_the_issues_case_2000_acknowledged_messages_then_eight_bytes_flipped(tmp_path, where):
    """Issue 23's run: a sandbox server, a topic and 2,000 messages acknowledged (acks=all), a
    kill -9, eight bytes flipped in the journal. It used to start, drop every record after the
    damage and delete the journal; now it refuses, and the file stays as it was."""
    proc, bootstrap = serve(tmp_path)
    try:
        create_topics_rf1(bootstrap, ["acked"])
        acked = produce(bootstrap, ["acked"], 2000)
    finally:
        kill9(proc)
    assert len(acked) == 2000
    (path,) = journal.journal_files(tmp_path).values()
    offsets = _entry_offsets(path)
    at = 20 if where == "offset 20" else path.stat().st_size // 2
    _flip(path, at)
    before = _listing(tmp_path)
    line = _refused(tmp_path)
    ends = [*offsets[1:], path.stat().st_size]
    bad = [o for o, end in zip(offsets, ends) if o < at + 8 and at < end]  # the entries the flip hit
    damaged_at = 0 if at < len(journal.FILE_HEADER) else bad[0]
    following = len([o for o in offsets if o > damaged_at and o not in bad])
    assert line.startswith(f"{path} is damaged at byte {damaged_at} ({following} entries follow it)"), line
    assert _listing(tmp_path) == before
