"""docs/sandbox.md lists exactly the APIs and versions the sandbox serves."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_shell import protocol
from kafka_shell.sandbox import handlers

DOC = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"


def test_api_table_matches_what_the_brokers_serve():
    documented = {int(k): (name, int(lo), int(hi))
                  for k, name, lo, hi in re.findall(r"^\| (\d+) \| (\w+) \| (\d+)-(\d+) \|$", DOC.read_text(), re.M)}
    served = {k: (protocol.api_name(k), a.versions.start, a.versions.stop - 1)
              for k, a in handlers.load().items()}
    assert documented == served, "regenerate the table in docs/sandbox.md (the command is above it)"


def test_controller_listener_table_matches_what_controllers_serve():
    from kafka_shell.sandbox.server import CONTROLLER_LISTENER_APIS
    section = DOC.read_text().split("<!-- controller-listener-table -->")[1].split("<!-- /controller-listener-table -->")[0]
    documented = {int(k): (name, int(lo), int(hi))
                  for k, name, lo, hi in re.findall(r"^\| (\d+) \| (\w+) \| (\d+)-(\d+) \|$", section, re.M)}
    served = {k: (protocol.api_name(k), a.versions.start, a.versions.stop - 1)
              for k, a in handlers.load().items() if k in CONTROLLER_LISTENER_APIS}
    assert documented == served, "regenerate the controller listener table in docs/sandbox.md"
