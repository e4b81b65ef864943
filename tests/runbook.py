"""docs/runbook-controller-replacement.md, replayed as tests/tutorial.py replays the tutorial: its
`kafka> ` lines run in order in one shell connected to the controllers alone, on a sandbox with
a dynamic quorum (controllers 100-102, two brokers); its `$ ` lines that stop the failed
controller and format and start the new one are done to the sandbox (ACTIONS). The cluster id
and the new controller's directory id are fixed, so the page's command lines hold for every run.

    .venv/bin/python -m tests.runbook          # rewrite the page's outputs from a run now
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from tests import tutorial

PAGE = Path(__file__).resolve().parent.parent / "docs" / "runbook-controller-replacement.md"
CLUSTER_ID = "rUnBoOk-CoNtRoLlErS0Aw"
NEW_CONTROLLER = 103
NEW_DIRECTORY = "bM5-vZDs2kcYh3wWX8Cg5A"
START = "$ kafka-shell --bootstrap-controller c1:9093,c2:9093,c3:9093"
STOP = "$ ssh c3 sudo systemctl stop kafka   # the failed controller 102, if it still runs"
FORMAT = ("$ ssh c4 bin/kafka-storage.sh format --cluster-id rUnBoOk-CoNtRoLlErS0Aw "
          "--config config/controller.properties --no-initial-controllers")
LAUNCH = "$ ssh c4 bin/kafka-server-start.sh -daemon config/controller.properties"
EXACT = (START, STOP, FORMAT, LAUNCH)


@contextlib.contextmanager
def cluster() -> Iterator:
    from kafka_shell.sandbox.server import Sandbox
    with Sandbox(brokers=2, controllers=3, dynamic_quorum=True, cluster_id=CLUSTER_ID) as sandbox:
        yield sandbox


def actions(sandbox) -> dict[str, Callable[[], object]]:
    return {STOP: lambda: sandbox.stop_controller(102),
            FORMAT: lambda: None,   # the sandbox formats and starts in one step, below
            LAUNCH: lambda: sandbox.add_controller(NEW_CONTROLLER, NEW_DIRECTORY)}


def replay(sandbox, cwd: str) -> tuple[list[tutorial.Step], list[list[str]]]:
    from kafka_shell.connection.session import Target
    items = tutorial.steps(PAGE.read_text(), EXACT)
    target = Target("", bootstrap_controllers=sandbox.bootstrap_controllers)
    return items, tutorial.replay(items, sandbox, cwd, target=target, actions=actions(sandbox))


def main() -> int:
    text = PAGE.read_text()
    with tempfile.TemporaryDirectory() as cwd, cluster() as sandbox:
        os.chdir(cwd)
        os.environ["KAFKA_SHELL_DATA_DIR"] = os.path.join(cwd, ".data")
        _, printed = replay(sandbox, cwd)
        page = tutorial.rewritten(text, printed, cwd, EXACT)
    PAGE.write_text(page)
    print(f"Wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
