"""Generated code compiled once per machine (kafka_shell/base/compiled.py): a second process
loads what the first compiled; a cache file that is damaged, or holds other source under the
same name, or a cache that cannot be written, only means compiling again."""

from __future__ import annotations

import os
import subprocess
import sys

from kafka_shell.base import compiled

SOURCE = "def f(x):\n    return x * 2\n"


def run(code) -> object:
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102
    return namespace["f"](21)


def test_code_compiled_once_is_loaded_after(tmp_path, monkeypatch):
    monkeypatch.setenv(compiled.CACHE_ENV, str(tmp_path))
    first = compiled.compiled(SOURCE, "<f>")
    files = list(tmp_path.rglob("*"))
    kept = [f for f in files if f.is_file()]
    assert len(kept) == 1 and run(first) == 42
    # Another process finds it and does not compile: its compile() would fail.
    loaded = subprocess.run([sys.executable, "-c", (
        "import builtins, sys\n"
        "from kafka_shell.base import compiled\n"
        "builtins.compile = None\n"
        f"ns = {{}}; exec(compiled.compiled({SOURCE!r}, '<f>'), ns); print(ns['f'](4))\n")],
        capture_output=True, text=True, env={**os.environ, compiled.CACHE_ENV: str(tmp_path)})
    assert loaded.stdout.strip() == "8", loaded.stderr
    assert run(compiled.compiled(SOURCE, "<f>")) == 42


def test_a_damaged_or_other_file_means_compiling_again(tmp_path, monkeypatch):
    monkeypatch.setenv(compiled.CACHE_ENV, str(tmp_path))
    compiled.compiled(SOURCE, "<f>")
    (path,) = [f for f in tmp_path.rglob("*") if f.is_file()]
    path.write_bytes(b"\x00garbage")
    assert run(compiled.compiled(SOURCE, "<f>")) == 42
    # The same file name holding other source (a crc32 collision): not used.
    other = "def f(x):\n    return x * 3\n"
    path.write_bytes(__import__("marshal").dumps(("<f>", other, compile(other, "<f>", "exec"))))
    assert run(compiled.compiled(SOURCE, "<f>")) == 42


def test_a_cache_that_cannot_be_written_still_compiles(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv(compiled.CACHE_ENV, str(blocked))
    assert run(compiled.compiled(SOURCE, "<f>")) == 42
