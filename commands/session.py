"""Commands about the shell itself: help, topic context, refresh, output format, named clusters."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from itertools import groupby

from kafka_shell.connection import clusters
from kafka_shell.admin import topics
from kafka_shell.base.errors import UsageError, shown
from kafka_shell.declarations.parsing import find_command, format_entries, help_text, wrap_lines
from kafka_shell.declarations.registry import Option, command, load_commands
from kafka_shell.declarations.render import EXPANDED, FORMATS, Result

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session


@command("help", Option("command", metavar="COMMAND", completer=None, help="A command to explain."),
         aliases=("?",),
         help="List the commands, or explain one (also: COMMAND --help, ?).",
         examples=("help", "help create-topic"))
def help_command(session: Session, args: dict) -> Result:
    if args["command"]:
        return Result(text=help_text(find_command(args["command"])))
    visible = [c for c in load_commands().commands.values() if not c.sandbox_only or session.sandbox is not None]
    order = {family: i for i, family in enumerate(FAMILY_TITLES)}
    lines: list[str] = []
    for family, group in groupby(sorted(visible, key=lambda c: (order.get(c.family, len(order)), c.family, c.name)),
                                 key=lambda c: c.family):
        entries: list[tuple[str, str] | None] = [(", ".join((c.name, *c.aliases)), c.help) for c in group]
        lines += ["", f"{FAMILY_TITLES.get(family, family.replace('_', ' ').capitalize())}:", *format_entries(entries)]
    lines += ["", "Type `help COMMAND` or `COMMAND --help` for its options.",
              "In the interactive shell, `COMMAND > FILE` (or >> FILE) writes its result to a file and "
              "`COMMAND | SHELL COMMAND` pipes it to one; `\\o FILE` appends every result to FILE until `\\o` alone."]
    return Result(text="\n".join(wrap_lines(lines[1:])))


# The families `help` lists, in this order, under these titles (topics first: what most use).
FAMILY_TITLES = {
    "topics": "Topics", "records": "Records", "groups": "Consumer groups",
    "share_streams_groups": "Share groups and streams groups", "transactions": "Transactions", "configs": "Configs",
    "cluster": "Cluster and brokers", "quorum": "Controller quorum (KRaft)", "features": "Features",
    "client_metrics": "Client metrics", "tokens": "Delegation tokens", "watch": "Watching",
    "inspect": "Inspection", "elections": "Leader elections",
    "recovery": "Recovery", "reassign": "Reassignments", "balance": "Balance, drain and cordons",
    "health": "Health", "security": "Security (ACLs, SCRAM, quotas)",
    "controller_history": "Controller history", "preferred_controller": "Preferred controller",
    "broker_ids": "Broker ids (KIP-426)", "rolling_restart": "Rolling restarts", "pipeline": "Fleet analysis",
    "sandbox": "Sandbox", "session": "The shell",
}


@command("topic", Option("name", metavar="TOPIC", completer="topic", help="Topic to switch to."),
         help="Switch the context topic (topic commands use it when --topic is left out); "
              "`topic` alone leaves it.",
         examples=("topic orders", "topic"))
def topic_command(session: Session, args: dict) -> Result:
    if not args["name"]:
        left, session.topic = session.topic, None
        return Result.message(f'Left "{left}" topic.' if left else "No topic context.")
    topics.require(session.conn, args["name"])
    session.topic = args["name"]
    return Result.message(f'Switched to "{args["name"]}" topic.')


@command("refresh", help="Fetch the cluster metadata again (topics, brokers, controller).")
def refresh_command(session: Session, args: dict) -> Result:
    snap = session.conn.refresh()
    return Result.message(f"Metadata refreshed: {len(snap.brokers)} broker(s), {len(snap.topics)} topic(s), "
                          f"{snap.controller.describe()}.")


@command("output", Option("format", choices=FORMATS, help="table, json, jsonl or csv."),
         help="Show or set the output format of this session.", examples=("output json",))
def output_command(session: Session, args: dict) -> Result:
    if args["format"]:
        session.output = args["format"]
    return Result.message(f"Output format: {session.output}.")


@command("pager", Option("state", choices=("on", "off"), help="on: page results taller than the terminal."),
         help="Show or set whether the interactive shell pages tall results through $PAGER "
              "(default less -SRXF).",
         examples=("pager off", "pager on"))
def pager_command(session: Session, args: dict) -> Result:
    if args["state"]:
        session.pager = args["state"] == "on"
    return Result.message(f"Pager: {'on' if session.pager else 'off'}.")


@command("expanded", Option("state", choices=EXPANDED,
                            help="on: vertical records; off: rows; auto: vertical when wider than the terminal."),
         help="Show or set the vertical table layout, like pgcli's \\x (default auto).",
         examples=("expanded on", "expanded auto"))
def expanded_command(session: Session, args: dict) -> Result:
    if args["state"]:
        session.expanded = args["state"]
    return Result.message(f"Expanded display: {session.expanded}.")


@command("exit", aliases=("quit",), help="Leave the interactive shell (also Ctrl-D).")
def exit_command(session: Session, args: dict) -> Result:
    # The REPL ends on these words before running anything; elsewhere there is nothing to leave.
    return Result.message("exit and quit leave the interactive shell; here they do nothing.")


CLEAR_SCREEN = "\x1b[H\x1b[2J"


@command("clear", help="Clear the screen (also Ctrl-L).")
def clear_command(session: Session, args: dict) -> Result:
    if session.stdout.isatty():
        session.stdout.write(CLEAR_SCREEN)
        session.stdout.flush()
    return Result()


@command("clusters", help="List the named clusters (from clusters.json in the config directory).", tables=("clusters",))
def clusters_command(session: Session, args: dict) -> Result:
    current = session.cluster or clusters.current()
    rows = [[name, entry.get("bootstrap") or None, entry.get("bootstrap_controller"), len(entry.get("properties") or {}),
             name == current] for name, entry in sorted(clusters.load().items())]
    return Result.table(["Name", "Bootstrap", "BootstrapController", "Properties", "Current"], rows, name="clusters")


@command("use-cluster", Option("name", required=True, metavar="NAME", completer="cluster"),
         help="Switch to a named cluster (and make it the default for the next runs).",
         examples=("use-cluster prod",))
def use_cluster(session: Session, args: dict) -> Result:
    from kafka_shell.connection.client_config import check_bootstrap, validate
    from kafka_shell.connection.session import Target
    bootstrap, props, controllers = clusters.get(args["name"])
    for given in filter(None, (bootstrap, controllers)):
        check_bootstrap(given, f'cluster "{args["name"]}"')
    validate(props)  # as at start: bad settings fail here, for every command alike
    timeout = session.target.timeout_s if session.target else 10.0
    session.switch(Target(bootstrap, props, cluster=args["name"], timeout_s=timeout,
                          bootstrap_controllers=controllers))
    clusters.set_current(args["name"])
    if session.interactive:
        session.connect()  # now, so a wrong address shows here, not at the next command
    return Result.message(f'Using cluster "{args["name"]}" ({bootstrap or "controllers " + str(controllers)}).')


CLUSTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


@command("add-cluster", Option("name", required=True, metavar="NAME"),
         Option("--bootstrap-server", metavar="H:P[,H:P]", aliases=("--broker-list",),
                help="Its brokers (this, --bootstrap-controller or both)."),
         Option("--bootstrap-controller", metavar="H:P[,H:P]",
                help="Its KRaft controllers' listeners (alone: the shell talks to the controllers only)."),
         Option("-X", repeatable=True, metavar="KEY=VALUE",
                help="A client property; write ${ENV} to keep a secret out of the file."),
         Option("--store-secret", flag=True,
                help="Write secrets given in clear into clusters.json (mode 0600) all the same."),
         help="Add (or replace) a named cluster in clusters.json.",
         examples=("add-cluster local --bootstrap-server localhost:9092",
                   "add-cluster prod --bootstrap-server k1:9093 -X security.protocol=SASL_SSL "
                   "-X 'sasl.password=${PROD_PASSWORD}'"))
def add_cluster(session: Session, args: dict) -> Result:
    from kafka_shell.connection.client_config import check_bootstrap, check_property_names, clear_secrets, parse_x_options
    if not CLUSTER_NAME.fullmatch(args["name"]):
        raise UsageError(f'Invalid cluster name "{shown(args["name"])}": use up to 64 letters, digits, "-" or "_", '
                         "starting with a letter or digit")
    if not args["bootstrap_server"] and not args["bootstrap_controller"]:
        raise UsageError("add-cluster needs --bootstrap-server, --bootstrap-controller or both")
    for option in ("bootstrap_server", "bootstrap_controller"):
        if args[option] and "${" not in args[option]:  # a ${VAR} is checked when the cluster is used
            check_bootstrap(args[option], "--" + option.replace("_", "-"))
    props = parse_x_options(args["X"])
    check_property_names(props, "add-cluster")
    secrets = clear_secrets(props)
    if secrets and not args["store_secret"]:
        raise UsageError(f"Not writing {', '.join(secrets)} in clear into clusters.json: reference the "
                         f"environment instead (-X '{secrets[0]}=${{ENV_VAR}}', read when the cluster is "
                         "used), or add --store-secret to store it (the file is readable by you only)")
    clusters.add(args["name"], args["bootstrap_server"] or "", props, args["bootstrap_controller"])
    return Result.message(f'Added cluster "{args["name"]}" to {clusters.clusters_file()}.')
