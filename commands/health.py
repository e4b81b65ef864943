"""health: the cluster at a glance, one line per check, read when it runs within --timeout (as
rpk cluster health, for Apache Kafka). With --watch it reads again every --interval until Ctrl-C;
--exit-when-healthy (which implies --watch) stops at the first healthy round, for a rolling
restart's "may I go on?".

Checks, most severe first: brokers down or fenced (and ids that replicas name but no broker has),
the KRaft quorum (a leader, voters in step), offline, under-min-ISR and ELR-only partitions
(critical); under-replicated and at-min-ISR partitions, hanging transactions, consumer groups
whose lag grows (warning); the balance goals (skew), topics that allow unclean elections, drained
or cordoned brokers and reassignments in progress (info: advice, not a fault; a rolling restart
may go on with them). Each line names the command that looks
closer. A part that could not be read (a broker that did not answer, the --timeout run out) is a
line of its own and makes the answer partial.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kafka_shell.admin import health
from kafka_shell.admin.balance import SPREAD_GOALS
from kafka_shell.base.deadline import Deadline
from kafka_shell.declarations import failure_lines
from kafka_shell.declarations.option_types import duration
from kafka_shell.declarations.registry import Option, command
from kafka_shell.declarations.render import Result, Table, output_text

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

CRITICAL, WARNING, UNKNOWN, INFO, OK = "critical", "warning", "unknown", "info", "ok"
ORDER = {CRITICAL: 0, UNKNOWN: 1, WARNING: 2, INFO: 3, OK: 4}
HEALTHY, PARTIAL, WARNINGS, CRITICALS, INTERRUPTED = 0, 1, 3, 4, 130
DEFAULT_INTERVAL_S = 5.0
SHOWN = 5          # names listed in a line before "..."
CLEAR = "\x1b[H\x1b[2J"
KEY = tuple[str, int]


@command("health",
         Option("--watch", flag=True, help="Read again every --interval and redraw, until Ctrl-C."),
         Option("--interval", type=duration, metavar="INTERVAL",
                help=f"Time between rounds with --watch (default {DEFAULT_INTERVAL_S:g}s)."),
         Option("--exit-when-healthy", flag=True, help="Watch until a round is healthy, then exit 0."),
         Option("--lag-window", type=duration, metavar="INTERVAL",
                help="Read consumer lag three times over this window to see it grow (with --watch: every round)."),
         help="Brokers, quorum, partitions, balance, transactions and lag at a glance; exit code by severity.",
         description=("One line per check, with the command that looks closer. Critical: a broker down or "
                      "fenced, an id replicas name that no broker has, no quorum leader, offline, under-min-ISR "
                      "or ELR-only partitions. Warning: under-replicated or at-min-ISR partitions, a lagging "
                      "quorum voter, hanging transactions, groups whose lag grows. Info (advice, not a fault): "
                      "balance goals not met (skew), topics allowing unclean elections, drained or cordoned "
                      "brokers, reassignments. "
                      "Everything is read when it runs, within --timeout; a part not read is named. Exit codes: "
                      "0 healthy, 1 partial (a part not read, nothing critical), 2 bad input, 3 warnings, "
                      "4 critical, 130 stopped with Ctrl-C."),
         examples=("health", "health --watch", "health --exit-when-healthy --interval 2s", "health -o json",
                   "health --lag-window 30s"),
         tables=("health",))
def health_cmd(session: Session, args: dict) -> Result:
    watch = args["watch"] or args["exit_when_healthy"]
    if not watch:
        return _result(_round(session, args, []))
    interval = args["interval"] if args["interval"] is not None else DEFAULT_INTERVAL_S
    fmt = args.get("output") or session.output
    terminal = _is_terminal(session.stdout)
    history: list[dict[str, int]] = []
    rounds = 0
    code = HEALTHY
    try:
        while True:
            rounds += 1
            table, code = _round(session, args, history)
            head = f"health, every {interval:g} s ({time.strftime('%H:%M:%S')}, round {rounds}; Ctrl-C stops)"
            body = output_text(Result(tables=[table]), fmt)
            if fmt == "table":
                session.stdout.write((CLEAR if terminal else ("\n" if rounds > 1 else "")) + head + "\n\n" + body)
            else:
                session.stdout.write(body)
            session.stdout.flush()
            if args["exit_when_healthy"] and code == HEALTHY:
                return Result.message(f"Healthy after {rounds} round(s).")
            time.sleep(interval)
    except KeyboardInterrupt:
        return Result.message(f"Stopped after {rounds} round(s); the last was {_verdict(code)}.", exit_code=INTERRUPTED)


def _round(session: Session, args: dict, history: list[dict[str, int]]) -> tuple[Table, int]:
    """One read of the cluster: its table and exit code."""
    conn = session.conn
    deadline = Deadline(conn.timeout_s)
    facts = health.read(conn, deadline)
    history.append(dict(facts.lag))
    window = args["lag_window"]
    if window and "lag" not in facts.unread and not args["watch"] and not args["exit_when_healthy"]:
        for _ in range(2):   # three reads over the window
            time.sleep(window / 2)
            later = health.Facts(snapshot=facts.snapshot)
            try:
                why = health.read_lag(conn, later)
            except Exception as exc:  # noqa: BLE001 - a read that fails is a part not read
                why = health.Unread(failure=exc)
            if why is not None:
                facts.unread["lag"] = why
                break
            history.append(dict(later.lag))
    judged = len(history) >= 3
    rows = _lines(facts, health.growing(history) if judged else None, judged)
    rows.sort(key=lambda r: ORDER[r[0]])
    return Table(["Severity", "Check", "Count", "Detail", "LookCloser"], rows, name="health"), _code(rows)


def _result(outcome: tuple[Table, int]) -> Result:
    """The table, then each part not read with why (the broker that did not answer, and what it
    was asked), then the verdict."""
    table, code = outcome
    unread = [f"{row[1]}: {row[3]}" for row in table.rows if row[0] == UNKNOWN]
    return Result(tables=[table], messages=[*unread, f"The cluster is {_verdict(code)}."], exit_code=code)


def _code(rows: list[list]) -> int:
    found = {r[0] for r in rows}
    if CRITICAL in found:
        return CRITICALS
    if UNKNOWN in found:
        return PARTIAL
    return WARNINGS if WARNING in found else HEALTHY


def _verdict(code: int) -> str:
    return {HEALTHY: "healthy", PARTIAL: "not fully read (partial)", WARNINGS: "up, with warnings",
            CRITICALS: "in a critical state"}.get(code, "not read")


def _names(items, shown=SHOWN) -> str:
    items = [f"{i[0]}-{i[1]}" if isinstance(i, tuple) else str(i) for i in items]
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def _lines(f: health.Facts, growing: list[str] | None, judged: bool) -> list[list]:
    rows: list[list] = []

    def add(severity: str, check: str, count: int, detail: str, closer: str) -> None:
        rows.append([severity, check, count, detail, closer])

    snap = f.snapshot
    if snap is not None:
        live = sorted(snap.brokers)
        down = sorted(set(f.fenced) | set(f.missing))
        detail = f"{len(live)} live ({_names(live, 12)})"
        if f.fenced:
            detail += f"; fenced: {_names(sorted(f.fenced), 12)}"
        if f.missing:
            detail += f"; not in the cluster but named by replicas: {_names(f.missing, 12)}"
        add(CRITICAL if down else OK, "brokers", len(down), detail, "list-brokers" if not f.missing else "broker-ids")
    if f.quorum_read:
        if f.quorum_leader is None:
            add(CRITICAL, "quorum", 1, "the metadata quorum has no leader", "describe-quorum --replication")
        elif f.quorum_lagging:
            add(WARNING, "quorum", len(f.quorum_lagging), "voters behind the leader: " + ", ".join(
                f"{v} ({n} records)" for v, n in sorted(f.quorum_lagging.items())), "describe-quorum --replication")
        else:
            add(OK, "quorum", 0, f"leader {f.quorum_leader}, every voter in step", "describe-quorum --replication")
    if "partitions" not in f.unread and snap is not None:
        for cls, check, severity, closer in (
                ("unavailable_partitions", "offline partitions", CRITICAL, "describe-topic --unavailable-partitions"),
                ("under_min_isr_partitions", "under-min-ISR partitions", CRITICAL,
                 "describe-topic --under-min-isr-partitions"),
                ("under_replicated_partitions", "under-replicated partitions", WARNING,
                 "describe-topic --under-replicated-partitions"),
                ("at_min_isr_partitions", "at-min-ISR partitions", WARNING, "describe-topic --at-min-isr-partitions")):
            keys = f.partitions.get(cls, [])
            add(severity if keys else OK, check, len(keys), _names(keys) if keys else "no such partition", closer)
        add(CRITICAL if f.elr_only else OK, "ELR-only partitions", len(f.elr_only),
            (_names(f.elr_only) + ": no leader; their clean candidates are in the ELR (KIP-966)") if f.elr_only
            else "no such partition",
            "describe-topic --unavailable-partitions")
        add(INFO if f.unclean else OK, "unclean elections allowed", len(f.unclean),
            ("topics that may lose data on a failover: " + _names(f.unclean)) if f.unclean else "no topic allows them",
            f"describe-configs --entity-type topics --entity-name {f.unclean[0]}" if f.unclean else "describe-configs")
    if "balance" not in f.unread and f.goals:
        off = [g for g in f.goals if g.applies and not g.met_before]
        detail = "; ".join(_goal(g) for g in off) if off else "every goal met"
        add(INFO if off else OK, "balance", len(off), detail, "balance")
    if snap is not None:
        for b in sorted(set(f.cordoned) | {b for b in snap.brokers if f.leaders.get(b, 0) == 0 and f.replicas.get(b, 0)}):
            led, held = f.leaders.get(b, 0), f.replicas.get(b, 0)
            cordoned = b in f.cordoned
            state = "drained" if cordoned and led == 0 else "cordoned" if cordoned else "drained of leadership"
            add(INFO, "broker " + str(b), 1, f"{state}: {'cordoned, ' if cordoned else ''}leads {led}, holds {held} "
                f"replica(s)", f"undrain-broker {b}" if cordoned or led == 0 else f"describe-log-dirs --broker-list {b}")
    if "transactions" not in f.unread and snap is not None:
        hanging = sorted({key for key, _ in f.hanging})
        add(WARNING if hanging else OK, "hanging transactions", len(f.hanging),
            ("open transactions no coordinator will end, in " + _names(hanging)) if hanging
            else "no open transaction is hanging",
            f"find-hanging-transactions --topic {hanging[0][0]}" if hanging else "find-hanging-transactions --broker-id N")
    if "reassignments" not in f.unread and f.moving:
        add(INFO, "reassignments", f.moving, f"{f.moving} partition(s) moving", "reassign-partitions --list")
    if "lag" not in f.unread and snap is not None:
        if growing:
            add(WARNING, "consumer lag", len(growing), "lag grows in: " + _names(growing), f"describe-group {growing[0]}")
        elif judged:
            add(OK, "consumer lag", 0, f"no group's lag grows ({len(f.lag)} group(s))", "list-groups")
        else:
            add(OK, "consumer lag", 0, f"{len(f.lag)} group(s); growth needs more reads: --watch or --lag-window 30s",
                "describe-group GROUP")
    for part in sorted(f.unread):
        add(UNKNOWN, part, 0, failure_lines.health_unread_line(part, f.unread[part]), "health")
    return rows


def _goal(g) -> str:
    if g.goal in SPREAD_GOALS:
        return f"{g.title} {g.before * 100:.0f}% off ({g.target})"
    return f"{g.title}: {int(g.before)} {g.measure}"


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
