"""describe-configs and alter-configs for topics, brokers, the cluster-wide broker defaults and
groups (KIP-848's group configs: session and heartbeat times, share auto offset reset...); and
configs across the cluster (as rpk's cluster config export/import): export-configs,
import-configs, diff-configs (drift among brokers).

Options follow kafka-configs (`--entity-type topics|brokers|groups`, `--entity-name`, `--entity-default`,
`--add-config 'k=v,k2=[a,b]'`, `--delete-config k,k2`), with `--topic T` / `--broker ID` as
shorthands. Secret values are never printed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_shell.admin import cluster, cluster_configs, configs, topics
from kafka_shell.connection.client_config import is_secret
from kafka_shell.base.errors import ShellError, UsageError, printable, shown
from kafka_shell.base.files import read_json, write_new
from kafka_shell.declarations import config_files, failure_lines
from kafka_shell.declarations.option_types import CONFIG_NAME, broker_id, group_id
from kafka_shell.declarations.registry import INT32_MAX, Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

ENTITY_OPTIONS = (
    Option("--entity-type", choices=("topics", "brokers", "groups", "broker-loggers"),
           help="What the configs belong to (broker-loggers: a node's log levels)."),
    Option("--entity-name", metavar="NAME", completer="entity_name", help="Topic name, broker (node) id or group id."),
    Option("--entity-default", flag=True, help="The cluster-wide broker defaults."),
    Option("--topic", metavar="NAME", completer="topic", help="Shorthand for --entity-type topics --entity-name NAME."),
    Option("--broker", type=broker_id, metavar="ID", completer="broker",
           help="Shorthand for --entity-type brokers --entity-name ID."),
)
ENTITY_GROUP = ("--topic", "--broker", "--entity-name", "--entity-default")


def entity(args: dict) -> tuple[str, str]:
    """(entity type, name) from the options; '' is the broker-default entity."""
    if args["topic"]:
        return "topics", args["topic"]
    if args["broker"] is not None:
        return "brokers", str(args["broker"])
    if args["entity_default"]:
        if args["entity_type"] in ("topics", "groups", configs.BROKER_LOGGERS):
            raise UsageError("--entity-default applies to brokers: use --entity-type brokers")
        return "brokers", ""
    if not args["entity_type"]:
        raise UsageError("--entity-name needs --entity-type topics, brokers, groups or broker-loggers")
    if args["entity_type"] == "groups":
        return "groups", group_id(args["entity_name"])
    if args["entity_type"] in configs.NODE_KINDS and not (args["entity_name"].isascii() and args["entity_name"].isdigit()
                                                 and int(args["entity_name"]) <= INT32_MAX):
        raise UsageError(f'Invalid broker id "{shown(args["entity_name"])}": use a number (see list-brokers)')
    return args["entity_type"], args["entity_name"]


@command("describe-configs", *ENTITY_OPTIONS,
         Option("--all", flag=True, help="Show every config, defaults included."),
         exclusive_groups=(ENTITY_GROUP,), topic_context=True, context_without=("--entity-type", *ENTITY_GROUP),
         check=lambda args: _entity_given(args),
         help="Show the configs of a topic, a broker (--entity-type brokers alone: every broker, as kafka-configs), "
              "the broker defaults, a group (overrides only unless --all) or a node's log levels (broker-loggers).",
         examples=("describe-configs --topic orders", "describe-configs --broker 1 --all",
                   "describe-configs --entity-type brokers",
                   "describe-configs --entity-type brokers --entity-default",
                   "describe-configs --entity-type groups --entity-name orders-app --all",
                   "describe-configs --entity-type broker-loggers --entity-name 1"), tables=("configs",))
def describe_configs(session: Session, args: dict) -> Result:
    if not _entity_given(args):
        return _every_broker(session, args["all"])
    kind, name = entity(args)
    _require_entity(session, kind, name)
    entries = configs.describe(session.conn, kind, [name]).get(name, [])
    rows = [[e.name, e.shown, e.source, e.sensitive, e.read_only] for e in sorted(entries)
            if args["all"] or e.source != "DEFAULT_CONFIG"]
    return Result.table(["Name", "Value", "Source", "Sensitive", "ReadOnly"], rows, name="configs")


def _entity_given(args: dict) -> bool:
    """Whether the line names one entity; if not, only --entity-type brokers may stand alone."""
    if any(args[o.lstrip("-").replace("-", "_")] not in (None, False) for o in ENTITY_GROUP):
        return True
    if args["entity_type"] != "brokers":
        raise UsageError(f"describe-configs needs one of {', '.join(ENTITY_GROUP)} (--entity-type brokers alone "
                         "describes every broker)")
    return False


def _every_broker(session: Session, everything: bool) -> Result:
    """kafka-configs --describe --entity-type brokers: each live broker's configs, asked of it;
    a broker that does not answer is one line (exit 1), the others shown."""
    rows, failures = [], []
    for broker in sorted(session.conn.read().brokers):
        try:
            entries = configs.describe(session.conn, configs.BROKERS, [str(broker)]).get(str(broker), [])
        except ShellError as exc:
            failures.append(f"Broker {broker}: {exc}")
            continue
        rows += [[broker, e.name, e.shown, e.source, e.sensitive, e.read_only] for e in sorted(entries)
                 if everything or e.source != "DEFAULT_CONFIG"]
    return Result.outcome([Table(["Broker", "Name", "Value", "Source", "Sensitive", "ReadOnly"], rows, name="configs")],
                          [], failures)


def _below_the_default(session: Session, keys: list[str]) -> dict[str, configs.ConfigEntry]:
    """Where the broker defaults set no value, what applies now: a broker's static config or
    Kafka's default (read at the first live broker; its own dynamic overrides are no default)."""
    live = sorted(session.conn.read().brokers)
    if not keys or not live:
        return {}
    entries = configs.describe(session.conn, configs.BROKERS, [str(live[0])], keys).get(str(live[0]), [])
    return {e.name: e for e in entries if e.source in ("STATIC_BROKER_CONFIG", "DEFAULT_CONFIG")}


def _require_entity(session: Session, kind: str, name: str) -> None:
    """The topic or broker must exist now (read fresh), before its configs are asked for (a
    group need not: Kafka keeps the configs of a group to come). Group configs need a cluster
    that has them."""
    if kind == configs.TOPICS:
        topics.require(session.conn, name)
    elif kind == configs.GROUPS:
        configs.require_group_configs(session.conn)
    elif name:
        if absent := cluster.absent(session.conn, [int(name)]):
            raise failure_lines.absent_error(absent)


def add_config_items(text: str) -> dict[str, str]:
    """kafka-configs' `k=v,k2=[a,b]`: commas separate items except inside brackets."""
    items, depth, current = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    out = {}
    for item in filter(None, (i.strip() for i in items)):
        key, sep, value = item.partition("=")
        if not sep or not CONFIG_NAME.fullmatch(key.strip()):
            raise ValueError("k=v[,k2=v2] (a list value in brackets: k=[a,b]; k a config name)")
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        out[key.strip()] = value
    return out


def key_list(text: str) -> list[str]:
    keys = [k.strip() for k in text.split(",") if k.strip()]
    if not keys or not all(CONFIG_NAME.fullmatch(k) for k in keys):
        raise ValueError("config names separated by ','")
    return keys


@command("alter-configs", *ENTITY_OPTIONS,
         Option("--add-config", type=add_config_items, metavar="K=V,K2=[A,B]", completer="config_key",
                help="Configs to set."),
         Option("--delete-config", type=key_list, metavar="K,K2", completer="config_key",
                help="Configs to remove (back to their default)."),
         required_groups=(ENTITY_GROUP,), mutates=True, topic_context=True,
         help="Set or remove configs of a topic, a broker, the broker defaults or a group, or a node's log "
              "levels (broker-loggers: --delete-config gives a logger its parent's level again).",
         examples=("alter-configs --topic orders --add-config retention.ms=86400000",
                   "alter-configs --entity-type groups --entity-name app --add-config consumer.session.timeout.ms=60000",
                   "alter-configs --entity-type brokers --entity-default --add-config log.retention.ms=3600000",
                   "alter-configs --topic orders --delete-config retention.ms",
                   "alter-configs --entity-type broker-loggers --entity-name 1 --add-config kafka.controller=DEBUG"), tables=("changes",))
def alter_configs_command(session: Session, args: dict) -> Result:
    if not (args["add_config"] or args["delete_config"]):
        raise UsageError("alter-configs needs --add-config or --delete-config")
    kind, name = entity(args)
    _require_entity(session, kind, name)
    set_, delete = args["add_config"] or {}, args["delete_config"] or []
    both = set(set_) & set(delete)
    if both:
        raise UsageError(f"{', '.join(sorted(both))} is both added and deleted: pick one")
    missing = configs.missing_deletions(session.conn, kind, [name], delete)
    if missing:
        raise UsageError(failure_lines.missing_config_line(kind, missing))
    if not args["dry_run"]:
        return Result.outcome([], *failure_lines.config_change_lines(
            configs.alter(session.conn, kind, [name], set_, delete, False), kind, False))
    # What would change, old -> new, read now; then the cluster's own validation of it.
    current = {e.name: e for e in configs.describe(session.conn, kind, [name]).get(name, [])}
    if kind == configs.BROKERS and not name:
        current = {**_below_the_default(session, [k for k in [*set_, *delete] if k not in current]), **current}
    rows = []
    for key in [*set_, *delete]:
        now = current.get(key)
        secret = is_secret(key) or (now is not None and now.sensitive)
        new = (configs.HIDDEN if secret else set_[key]) if key in set_ else None
        rows.append([key, now.shown if now is not None else None, now.source if now is not None else None,
                     new if key in set_ else "(default)"])
    done, refused = failure_lines.config_change_lines(configs.alter(session.conn, kind, [name], set_, delete, True),
                                                      kind, True)
    return Result.outcome([Table(["Name", "Value", "Source", "NewValue"], rows, name="changes")], done, refused)


# -- configs across the cluster: export-configs, import-configs, diff-configs -----------------------


@command("export-configs",
         Option("file", required=True, metavar="FILE", completer="path", help="The JSON file to write (a new one)."),
         help="Write the cluster's dynamic configs to a JSON file: the broker defaults, each broker's own, topics' "
              "overrides, groups' configs and client quotas; sensitive values are left out (the file lists their keys).",
         description="JSON because it carries every value exactly as Kafka gives it (no escaping rules to get "
                     "wrong, unlike properties files), holds the entities of every kind in one document, diffs well "
                     "(sorted, indented) and is read by everything. import-configs reads it back; diff two exports to "
                     "compare clusters. Internal topics are left out.",
         examples=("export-configs prod-configs.json",), tables=("exported",))
def export_configs(session: Session, args: dict) -> Result:
    path = Path(args["file"]).expanduser()
    if os.path.lexists(path):   # write_new refuses it too, but only after everything was read
        raise UsageError(f"{printable(str(path))} already exists: remove it or choose another file name")
    snap = cluster_configs.read(session.conn)
    doc = config_files.document(snap, cluster.cluster_id(session.conn))
    write_new(path, json.dumps(doc, indent=2) + "\n")
    rows: list[list] = []
    for section in cluster_configs.SECTIONS:
        if section == cluster_configs.QUOTAS:
            rows.append([section, len(snap.quotas), sum(len(v) for v in snap.quotas.values()), 0])
            continue
        written = doc[section] if section != cluster_configs.BROKER_DEFAULTS else {"": doc[section]}
        left_out = sum(len(v) for v in snap.sensitive[section].values())
        rows.append([section, len(written), sum(len(v) for v in written.values()), left_out])
    hidden = sum(r[3] for r in rows)
    notes = [*failure_lines.snapshot_notes(snap), f"Wrote {sum(r[2] for r in rows)} config(s) of {sum(r[1] for r in rows)} "
             f"entities to {printable(str(path))}" + (f"; {hidden} sensitive value(s) left out (the file lists their keys)."
                                                      if hidden else ".")]
    return Result.outcome([Table(["Section", "Entities", "Configs", "SensitiveLeftOut"], rows, name="exported")],
                          notes, [*failure_lines.config_lines(snap.broker_errors),
                                  *failure_lines.group_listing_lines(snap.group_listing_errors)])


IMPORT_CONFIRM = Confirm(applies=lambda args: args["execute"], proposed=True, opt_in="--execute")


@command("import-configs",
         Option("file", required=True, metavar="FILE", completer="path", help="A file export-configs wrote."),
         Option("--execute", flag=True, help="Apply the changes (without it they are only shown, and validated by "
                                             "the cluster)."),
         Option("--yes", flag=True, help="In the REPL: do not ask for confirmation before --execute."),
         mutates=True, confirm=IMPORT_CONFIRM,
         help="Show (default) or --execute the config changes that make the cluster match a file of export-configs: "
              "each entity it names gets exactly its configs; others are left alone.",
         description="The changes are validated by the cluster first (IncrementalAlterConfigs, validate only); "
                     "--execute applies them only when all are valid. Sensitive keys the file left out are never "
                     "changed or deleted. Brokers and topics the cluster does not have are named, not created.",
         examples=("import-configs prod-configs.json", "import-configs prod-configs.json --execute"), tables=("changes",))
def import_configs(session: Session, args: dict) -> Result | Proposal:
    path = printable(args["file"])   # whole: a path cut short names nothing
    wanted = config_files.from_document(read_json(args["file"], "", "give a file export-configs wrote"), path)
    now = cluster_configs.read(session.conn, wanted.sections)
    noted = failure_lines.snapshot_notes(now)
    changes, absent = cluster_configs.plan(wanted, now)
    table = Table(["Section", "Entity", "Name", "Value", "NewValue", "Action"],
                  [[c.section, c.entity or None, c.key, c.value, c.new, c.action] for c in changes], name="changes")
    # What the cluster does not have, did not say, or refuses (validated only) stops --execute.
    refused = cluster_configs.apply(session.conn, changes, wanted, validate_only=True) if changes else {}
    failures = [*failure_lines.config_lines(now.broker_errors),
                *failure_lines.group_listing_lines(now.group_listing_errors),
                *(f"{cluster_configs.describe_entity(section, name).capitalize()} is not in the cluster: its "
                  f"{count} config(s) are not applied." for (section, name), count in absent.items()),
                *failure_lines.import_refusal_lines(refused)]
    entities = len({(c.section, c.entity) for c in changes})
    execute = args["execute"] and not args["dry_run"]
    if not changes:
        return Result.outcome([table], [*noted, f"The cluster matches {path}: nothing to change."], failures)
    if failures:
        return Result.outcome([table], noted, [*failures, "Nothing was changed: fix what is named above first."
                                                   if execute else "Fix what is named above before --execute."])
    if execute:
        def apply() -> Result:
            failed = failure_lines.import_refusal_lines(cluster_configs.apply(session.conn, changes, wanted,
                                                                              validate_only=False))
            return Result.outcome([table], [*noted, f"Changed the configs of {entities - len(failed)} of {entities} "
                                            "entities."], failed)
        return Proposal(f"Change {len(changes)} config(s) of {entities} entities to match {path}. Continue?",
                        "import-configs --execute changes configs", apply)
    return Result.outcome([table], [*noted, f"{len(changes)} change(s) of {entities} entities, validated by the "
                                    "cluster. Dry run: nothing was changed (add --execute to apply)."], [])


@command("diff-configs",
         Option("--broker", type=broker_id, repeatable=True, metavar="ID", completer="broker",
                help="A broker to compare (give two or more)."),
         Option("--all-brokers", flag=True, help="Every broker of the cluster."),
         Option("--include-identity", flag=True,
                help="Also the configs each broker has of its own by design (node.id, listeners, log.dirs, rack)."),
         required_groups=(("--broker", "--all-brokers"),),
         help="Config drift: the configs whose value in effect differs among brokers, each broker's value with its "
              "source (static, dynamic, default) and the sources beneath it.",
         examples=("diff-configs --broker 1 --broker 2", "diff-configs --all-brokers"), tables=("differences",))
def diff_configs(session: Session, args: dict) -> Result:
    if args["all_brokers"]:
        ids = sorted(session.conn.read([]).brokers)
    else:
        ids = sorted(set(args["broker"]))
        if absent := cluster.absent(session.conn, ids):
            raise failure_lines.absent_error(absent)
    if len(ids) < 2:
        raise UsageError("diff-configs compares two brokers or more: give --broker twice, or --all-brokers")
    read = configs.each_broker(session.conn, ids)
    described, failures = read.rows, failure_lines.config_lines(read.errors)
    drifts = cluster_configs.drift(described, args["include_identity"])
    rows = []
    for d in drifts:
        for b in described:
            e = d.entries.get(b)
            beneath = [f"{source}:{name}={value if value is not None else ''}" for source, name, value in e.synonyms[1:]] \
                if e is not None else []
            value = None if e is None else configs.HIDDEN if e.sensitive else e.value   # Kafka never gives a sensitive one
            rows.append([d.name, b, value, e.source if e is not None else None, beneath])
    compared = ", ".join(map(str, described))
    if drifts:
        note = (f"{len(drifts)} config(s) differ among brokers {compared}: "
                + ", ".join(d.name for d in drifts[:10]) + (f" and {len(drifts) - 10} more." if len(drifts) > 10 else "."))
    else:
        note = (f"Brokers {compared} agree on every config"
                + ("." if args["include_identity"] else " (their own by design left out: --include-identity compares it)."))
    return Result.outcome([Table(["Name", "Broker", "Value", "Source", "Synonyms"], rows, name="differences")],
                          [note] if len(described) > 1 else [], failures)
