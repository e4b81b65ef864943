"""The state one run of the shell carries from line to line: the connection, the context topic,
the output format and settings, and how to ask for confirmation. REPL, one-shot and replay modes
each build one Session and pass every line through `runner.run_line(session, line)`.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from kafka_shell.base.deadline import Budget
from kafka_shell.base.errors import UsageError
from kafka_shell.connection.metadata import ClusterSnapshot

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager


@dataclass
class Target:
    """Where to connect: a bootstrap list and client properties (secrets included: never print)."""
    bootstrap: str
    properties: dict[str, str] = field(default_factory=dict)
    cluster: str | None = None        # the clusters.json name, when it came from there
    timeout_s: float = 10.0
    bootstrap_controllers: str | None = None  # --bootstrap-controller (KRaft controller listeners)


class Seen:
    """Principals and resources the ACLs listed this session named: completion offers them
    (a cache for typing, never an answer; describe-acls always asks the cluster)."""

    def __init__(self) -> None:
        self.principals: set[str] = set()
        self.resources: set[tuple[str, str]] = set()   # (resource type, name)

    def remember(self, rows: list[list]) -> None:
        """Take the rows of an ACL table (ResourceType, Name, PatternType, Principal, ...)."""
        for row in rows:
            self.resources.add((row[0], row[1]))
            self.principals.add(row[3])

    def names(self, kind: str) -> set[str]:
        """Resource names seen of an option's kind: topic, group or transactional_id."""
        wanted = kind.upper()
        return {name for rtype, name in self.resources if rtype == wanted}


@dataclass
class Session:
    target: Target | None = None
    topic: str | None = None          # the context topic (`topic NAME`)
    output: str = "table"
    interactive: bool = False
    yes: bool = False                 # --yes given on the command line
    debug: bool = False
    sandbox: Any = None               # the embedded Sandbox with --sandbox, else None
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    confirm: Callable[[str], bool] | None = None   # the REPL's yes/no prompt
    refresh_after_mutation: bool = False  # the REPL's cache (completion) follows its changes
    pager: bool = True                # the REPL pages results taller than the terminal (`pager off`)
    expanded: str = "auto"            # vertical tables: auto (when too wide), on, off (`expanded`)
    csv_table: str | None = None      # --csv-table: the table --output csv writes (default: the first)
    acl_names: Seen = field(default_factory=Seen)   # what ACL listings named (completion)
    budget: Budget = field(default_factory=Budget)  # what is left of the running command's --timeout
    _conn: ConnectionManager | None = None

    @property
    def cluster(self) -> str | None:
        return self.target.cluster if self.target else None

    @property
    def connected(self) -> bool:
        return self._conn is not None

    @property
    def conn(self) -> ConnectionManager:
        """The ConnectionManager, connected on first use (so `help` needs no cluster)."""
        if self._conn is None:
            if self.target is None:
                raise UsageError("No cluster given: use --bootstrap-server HOST:PORT, --cluster NAME "
                                 "or --sandbox")
            from kafka_shell.connection.manager import ConnectionManager
            conn = ConnectionManager(self.target.bootstrap, self.target.properties,
                                     timeout_s=self.target.timeout_s, notify=self.notify,
                                     bootstrap_controllers=self.target.bootstrap_controllers,
                                     debug=self.debug_line, budget=self.budget)
            conn.open()
            self._conn = conn
        return self._conn

    def bounded(self, seconds: float | None = None) -> contextlib.AbstractContextManager[None]:
        """One command's bound: every wait in the block ends within `seconds` (default
        --timeout) from now, connecting included."""
        return self.budget.of(seconds if seconds is not None else self.target.timeout_s if self.target else None)

    def connect(self) -> None:
        """Connect now (the first command would otherwise), so a wrong address shows at once."""
        self.conn  # noqa: B018 (the property connects)

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self.conn.snapshot

    def switch(self, target: Target) -> None:
        """Use another cluster from the next command on (the context topic does not carry over)."""
        self.close()
        self.target = target
        self.topic = None

    def debug_line(self, text: str) -> None:
        """--debug shows each request the shell sends (how a script's lines were batched)."""
        if self.debug:
            self.stderr.write(f"debug: {text}\n")

    def notify(self, message: str) -> None:
        """Events from the connection manager (controller moved, broker lost) go to stderr."""
        self.stderr.write(message.rstrip("\n") + "\n")
        self.stderr.flush()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
