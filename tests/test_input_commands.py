"""What a command line asks of the shell before it runs: secrets kept out of clusters.json, the
topic context, confirmations that name their targets. Lines run in-process through the runner,
one-shot (no terminal) unless a test gives the session a confirm function as the REPL does."""

from __future__ import annotations

import io
import json
import os
import stat

import pytest

from kafka_shell.runner import run_line
from kafka_shell.session import Session, Target


def oneshot(line: str, target: Target | None = None, **session_attrs) -> tuple[int, str, str]:
    s = Session(target=target, stdout=io.StringIO(), stderr=io.StringIO(), **session_attrs)
    try:
        code = run_line(s, line)
    finally:
        s.close()
    return code, s.stdout.getvalue(), s.stderr.getvalue()


def test_add_cluster_keeps_secrets_out_of_the_file_unless_told(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path))
    path = tmp_path / "clusters.json"
    code, out, err = oneshot("add-cluster p --bootstrap-server h:1 -X sasl.username=me -X sasl.password=hunter2")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "sasl.password" in err and "${" in err and "--store-secret" in err and "hunter2" not in err
    assert not path.exists()
    code, _, err = oneshot("add-cluster p --bootstrap-server h:1 -X 'sasl.password=${P_PASSWORD}'")
    assert code == 0, err
    assert json.loads(path.read_text())["clusters"]["p"]["properties"] == {"sasl.password": "${P_PASSWORD}"}
    code, _, err = oneshot("add-cluster q --bootstrap-server h:1 -X sasl.password=hunter2 --store-secret")
    assert code == 0, err
    assert json.loads(path.read_text())["clusters"]["q"]["properties"] == {"sasl.password": "hunter2"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
