"""Transaction commands, after Kafka's kafka-transactions tool: list-transactions,
describe-transaction, describe-producers, find-hanging-transactions, abort-transaction.

A consumer with isolation.level=read_committed stops at the first open transaction of a
partition: find-hanging-transactions names the open transactions no coordinator will end (Kafka's
algorithm, kafka_shell/admin/transactions.py), and abort-transaction writes their abort marker.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kafka_shell.declarations import failure_lines
from kafka_shell.admin import topics, transactions
from kafka_shell.base.errors import ShellError, UsageError, shown
from kafka_shell.base.names import check_topic_name
from kafka_shell.declarations.option_types import broker_id, choice_list, transactional_id
from kafka_shell.declarations.registry import INT16_MAX, INT32_MAX, INT64_MAX, Confirm, Option, command, int_range
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

partition_index = int_range(0, INT32_MAX, "a partition number")
producer_id = int_range(0, INT64_MAX, "a producer id")
TOPIC_HELP = "Topic (default: the context topic)."


transaction_states = choice_list(transactions.STATES, "states")


def producer_ids(text: str) -> list[int]:
    return [producer_id(part) for part in text.split(",")]


def topic_name(text: str) -> str:
    check_topic_name(text)
    return text


# -- list-transactions ---------------------------------------------------------------------------


@command("list-transactions",
         Option("--state", type=transaction_states, metavar="STATE[,STATE]",
                help="Only transactions in these states (e.g. Ongoing,PrepareAbort)."),
         Option("--producer-id", type=producer_ids, repeatable=True, metavar="ID[,ID]",
                help="Only the transactions of these producer ids."),
         Option("--duration-filter", type=int_range(0, INT64_MAX, "milliseconds"), metavar="MS",
                help="Only transactions open longer than this many milliseconds (Kafka 3.8+)."),
         Option("--transactional-id-pattern", type=transactions.check_pattern, metavar="REGEX",
                help="Only transactional ids matching this regular expression (Kafka 4.1+)."),
         help="List transactional ids with their coordinator, producer id and state.",
         examples=("list-transactions", "list-transactions --state Ongoing --duration-filter 60000",
                   "list-transactions --transactional-id-pattern 'orders-.*'"), tables=("transactions",))
def list_transactions(session: Session, args: dict) -> Result:
    pids = sorted({p for ps in args["producer_id"] for p in ps})
    duration = args["duration_filter"]
    listed = transactions.list_transactions(session.conn, args["state"] or (), pids,
                                            -1 if duration is None else duration, args["transactional_id_pattern"])
    rows = [[t.transactional_id, t.coordinator, t.producer_id, t.state] for t in listed.transactions]
    table = Table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows, name="transactions")
    return Result.outcome([table], [], failure_lines.transaction_listing_lines(listed.errors))


# -- describe-transaction ----------------------------------------------------------------------


@command("describe-transaction",
         Option("--transactional-id", type=transactional_id, required=True, metavar="ID", completer="transactional_id",
                help="Transactional id."),
         help="Describe a transactional id's transaction: producer, state, timeout, start, partitions.",
         examples=("describe-transaction --transactional-id orders-writer-1",), tables=("transaction",))
def describe_transaction(session: Session, args: dict) -> Result:
    tid = args["transactional_id"]
    described = transactions.describe(session.conn, [tid])
    if tid not in described.rows:
        raise ShellError(" ".join(failure_lines.transaction_lines(described.errors)))
    found = described.rows[tid]
    now = int(time.time() * 1000)
    row = [found.coordinator, tid, found.producer_id, found.producer_epoch, found.state, found.timeout_ms,
           found.start_ms, None if found.start_ms is None else now - found.start_ms,
           ",".join(f"{t}-{p}" for t, p in found.partitions) or None]
    return Result.table(["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                         "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                         "TopicPartitions"], [row], name="transaction",
                        kinds={"TransactionTimeoutMs": "ms", "CurrentTransactionStartTimeMs": "time",
                               "TransactionDurationMs": "ms"})


# -- describe-producers ------------------------------------------------------------------------

PRODUCER_COLUMNS = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                    "CurrentTransactionStartOffset"]


@command("describe-producers",
         Option("--topic", type=topic_name, required=True, metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--partition", type=partition_index, metavar="P", help="Partition (default: every one of the topic)."),
         Option("--broker-id", type=broker_id, metavar="ID", completer="broker",
                help="Ask this broker's replica (default: the leader)."),
         topic_context=True,
         help="The active producers of a partition: epochs, last sequence and time, open transaction's start.",
         examples=("describe-producers --topic orders --partition 0",
                   "describe-producers --topic orders --partition 0 --broker-id 2"), tables=("producers",))
def describe_producers(session: Session, args: dict) -> Result:
    keys = _partitions(session, args["topic"], args["partition"])
    snap = session.conn.read([args["topic"]])
    found = transactions.describe_producers(session.conn, snap, keys, args["broker_id"])
    failures = failure_lines.partition_lines(found.errors)
    rows = [[key[0], key[1], p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence,
             p.last_timestamp, p.txn_start_offset] for key, producers in found.rows.items() for p in producers]
    table = Table(["Topic", "Partition", *PRODUCER_COLUMNS], rows, name="producers", kinds={"LastTimestamp": "time"})
    notes = []
    if found.rows and not rows:   # partitions answered, none with producers
        which = " (the partitions that answered)" if failures else ""
        notes.append(f"No active producers on {_scope(args)}{which}.")
    return Result.outcome([table], notes, failures, answered=bool(found.rows))


def _partitions(session: Session, topic: str, partition: int | None) -> list[tuple[str, int]]:
    info = topics.require(session.conn, topic)
    if partition is None:
        return [(topic, p.partition) for p in info.partitions]
    if partition >= len(info.partitions):
        raise UsageError(f"Topic {shown(topic)} has {len(info.partitions)} partition(s): there is no partition "
                         f"{partition}.")
    return [(topic, partition)]


def _scope(args: dict) -> str:
    return f"{args['topic']}-{args['partition']}" if args["partition"] is not None else f"topic {args['topic']}"


# -- find-hanging-transactions -----------------------------------------------------------------


@command("find-hanging-transactions",
         Option("--broker-id", type=broker_id, metavar="ID", completer="broker",
                help="Search the partitions with a replica on this broker (asking that replica)."),
         Option("--topic", type=topic_name, metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--partition", type=partition_index, metavar="P", help="Only this partition of --topic."),
         Option("--max-transaction-timeout", type=int_range(0, INT32_MAX, "minutes"), default=15, metavar="MINUTES",
                help="Only transactions last written longer ago than this (as Kafka's default "
                     "transaction.max.timeout.ms)."),
         topic_context=True, context_without=("--broker-id",),
         help="Open transactions no coordinator will end (they stop read_committed consumers).",
         description="As Kafka's kafka-transactions find-hanging: the open transactions of the partitions "
                     "(DescribeProducers) last written longer than --max-transaction-timeout ago, whose "
                     "producer id no coordinator lists, or whose coordinator does not count the partition "
                     "in its transaction. abort-transaction --start-offset ends one.",
         examples=("find-hanging-transactions --topic orders", "find-hanging-transactions --broker-id 1",
                   "find-hanging-transactions --topic orders --partition 0 --max-transaction-timeout 0"), tables=("hanging",))
def find_hanging_transactions(session: Session, args: dict) -> Result:
    topic, partition, broker = args["topic"], args["partition"], args["broker_id"]
    if topic is None and broker is None:
        raise UsageError("find-hanging-transactions needs --topic or --broker-id to limit the search")
    if partition is not None and topic is None:
        raise UsageError("--partition needs --topic")
    snap = session.conn.read(None if topic is None else [topic])
    if topic is not None:
        _partitions(session, topic, partition)
    keys = transactions.partitions_to_search(snap, topic, partition, broker)
    found = transactions.find_hanging(session.conn, snap, keys, broker, args["max_transaction_timeout"] * 60_000)
    if found.unlisted:
        raise ShellError("Could not list the transactions of every coordinator, so no transaction can be called "
                         "hanging: " + " ".join(failure_lines.transaction_listing_lines(found.unlisted)))
    if found.undescribed:
        raise ShellError("Could not describe the transactions of the open producers, so none can be called "
                         "hanging: " + " ".join(failure_lines.transaction_lines(found.undescribed)))
    now = int(time.time() * 1000)
    rows = [[key[0], key[1], p.producer_id, p.producer_epoch, p.coordinator_epoch, p.txn_start_offset,
             p.last_timestamp, (now - p.last_timestamp) // 60_000]
            for key, producers in sorted(found.rows.items()) for p in sorted(producers)]
    table = Table(["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)"], rows, name="hanging", kinds={"LastTimestamp": "time"})
    notes = [] if rows else [f"No hanging transactions in {len(keys)} partition(s)."]
    if rows:
        notes.append("abort-transaction --topic T --partition P --start-offset N ends one.")
    failures = failure_lines.partition_lines(found.errors)
    return Result.outcome([table], notes, failures) if rows or failures else Result(tables=[table], messages=notes)


# -- abort-transaction -------------------------------------------------------------------------


@command("abort-transaction",
         Option("--topic", type=topic_name, required=True, metavar="NAME", completer="topic", help=TOPIC_HELP),
         Option("--partition", type=partition_index, required=True, metavar="P", help="Partition."),
         Option("--start-offset", type=int_range(0, INT64_MAX, "an offset"), metavar="N",
                help="The open transaction's first offset (describe-producers, find-hanging-transactions)."),
         Option("--producer-id", type=producer_id, metavar="ID", help="Producer id (brokers before 3.0)."),
         Option("--producer-epoch", type=int_range(0, INT16_MAX, "a producer epoch"), metavar="E",
                help="Producer epoch (with --producer-id)."),
         Option("--coordinator-epoch", type=int_range(-1, INT32_MAX, "a coordinator epoch"), metavar="E",
                help="Coordinator epoch (with --producer-id; -1 is taken as 0, as Kafka's tool does)."),
         topic_context=True, mutates=True, required_groups=(("--start-offset", "--producer-id"),),
         confirm=Confirm(proposed=True),
         help="Abort a hanging transaction: write its abort marker into the partition (asks first).",
         examples=("abort-transaction --topic orders --partition 0 --start-offset 1200 --yes",
                   "abort-transaction --topic orders --partition 0 --start-offset 1200 --dry-run"))
def abort_transaction(session: Session, args: dict) -> Result | Proposal:
    key = (args["topic"], args["partition"])
    _partitions(session, *key)
    if args["start_offset"] is not None:
        if args["producer_id"] is not None:
            raise UsageError("give --start-offset, or --producer-id with --producer-epoch and --coordinator-epoch, "
                             "not both")
        spec = transactions.abort_spec_at(session.conn, session.conn.read([key[0]]), key, args["start_offset"])
        started = f", started at offset {args['start_offset']}"
    else:
        for option in ("producer_epoch", "coordinator_epoch"):
            if args[option] is None:
                raise UsageError(f"--producer-id needs --{option.replace('_', '-')} too")
        spec = transactions.AbortSpec(key, args["producer_id"], args["producer_epoch"],
                                      max(args["coordinator_epoch"], 0))
        started = ""
    what = (f"the transaction of producer {spec.producer_id} (epoch {spec.producer_epoch}, coordinator epoch "
            f"{spec.coordinator_epoch}) on {key[0]}-{key[1]}{started}")
    if args["dry_run"]:
        return Result.message(f"Would abort {what} (dry run).")

    def apply() -> Result:
        transactions.abort(session.conn, spec)
        return Result.message(f"Aborted {what}.")
    return Proposal(f"Abort {what}? Its records become invisible to read_committed consumers. Continue?",
                    f"Abort {what}", apply)
