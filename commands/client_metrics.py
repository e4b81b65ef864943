"""Client metrics subscriptions (KIP-714), like kafka-client-metrics: list-client-metrics,
describe-client-metrics, alter-client-metrics and delete-client-metrics, read from the cluster
when they run."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from kafka_shell.admin import client_metrics
from kafka_shell.admin.configs import CLIENT_METRICS
from kafka_shell.base.answers import Answers
from kafka_shell.declarations import failure_lines
from kafka_shell.base.errors import KafkaCallError, UsageError
from kafka_shell.declarations.registry import INT32_MAX, Confirm, Option, command, int_range
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

COLUMNS = ["Name", "Metrics", "IntervalMs", "Match"]


def _list(text: str) -> list[str]:
    """Comma-separated items; an empty text clears the list."""
    return [x.strip() for x in text.split(",") if x.strip()]


def _name(text: str) -> str:
    text = text.strip()
    if not text or not text.isprintable() or not text.isascii():
        raise ValueError("a subscription name (printable ASCII, like producers)")
    return text


def _existing(session: Session, name: str) -> str:
    """The subscription, which must exist now (read fresh)."""
    known = client_metrics.names(session.conn)
    if name not in known:
        raise KafkaCallError(f'No client metrics subscription "{name}" (subscriptions: {", ".join(known) or "none"}).')
    return name


NAME = Option("--name", type=_name, metavar="NAME", help="The subscription's name.")


@command("list-client-metrics", help="The client metrics subscriptions' names (kafka-client-metrics --list).",
         examples=("list-client-metrics",), tables=("subscriptions",))
def list_client_metrics(session: Session, args: dict) -> Result:
    found = client_metrics.names(session.conn)
    return Result(tables=[Table(["Name"], [[n] for n in found], name="subscriptions")],
                  text="\n".join(found) if found else None,
                  messages=[] if found else ["No client metrics subscriptions."])


@command("describe-client-metrics", NAME,
         help="Client metrics subscriptions: metrics, push interval and client match (kafka-client-metrics "
              "--describe; all of them without --name).",
         examples=("describe-client-metrics", "describe-client-metrics --name producers"), tables=("subscriptions",))
def describe_client_metrics(session: Session, args: dict) -> Result:
    wanted = [_existing(session, args["name"])] if args["name"] else client_metrics.names(session.conn)
    subs = client_metrics.describe(session.conn, wanted)
    rows = [[s.name, list(s.metrics), s.interval_ms, list(s.match)] for s in subs]
    text = "\n".join(f"Client metrics configs for name:{s.name} are:\n  interval.ms={s.interval_ms}\n"
                     f"  match={','.join(s.match)}\n  metrics={','.join(s.metrics)}" for s in subs)
    return Result(tables=[Table(COLUMNS, rows, name="subscriptions", kinds={"IntervalMs": "ms"})], text=text)


@command("alter-client-metrics", NAME,
         Option("--generate-name", flag=True, help="Name a new subscription with a random id."),
         Option("--metrics", type=_list, metavar="PREFIX,PREFIX",
                help="Metric name prefixes to push ('' for none, '*' for all)."),
         Option("--interval", type=int_range(100, INT32_MAX, "an interval in ms"), metavar="MS",
                help="How often clients push, in ms (100 to 3600000)."),
         Option("--match", type=_list, metavar="K=REGEX,K=REGEX",
                help="Which clients: client_id, client_instance_id, client_software_name, client_software_version, "
                     "client_source_address, client_source_port, each =a regular expression."),
         required_groups=(("--name", "--generate-name"),), mutates=True,
         help="Create or change a client metrics subscription (kafka-client-metrics --alter).",
         examples=("alter-client-metrics --name producers --metrics org.apache.kafka.producer. --interval 60000",
                   "alter-client-metrics --generate-name --metrics '*' --match client_software_name=kafka-python"))
def alter_client_metrics(session: Session, args: dict) -> Result:
    if args["metrics"] is None and args["interval"] is None and args["match"] is None:
        raise UsageError("Give what to set: --metrics, --interval or --match")
    name = args["name"] or str(uuid.uuid4())
    return _changed(client_metrics.alter(session.conn, name, args["metrics"], args["interval"], args["match"],
                                         args["dry_run"]), args["dry_run"])


@command("delete-client-metrics", Option("--name", type=_name, required=True, metavar="NAME",
                                         help="The subscription to delete."),
         mutates=True, confirm=Confirm(),
         help="Delete a client metrics subscription (kafka-client-metrics --delete).",
         examples=("delete-client-metrics --name producers --yes",))
def delete_client_metrics(session: Session, args: dict) -> Result:
    return _changed(client_metrics.delete(session.conn, _existing(session, args["name"]), args["dry_run"]), args["dry_run"])


def _changed(answers: Answers[str, None], dry_run: bool) -> Result:
    done, refused = failure_lines.config_change_lines(answers, CLIENT_METRICS, dry_run)
    return Result.outcome([], done, refused)
