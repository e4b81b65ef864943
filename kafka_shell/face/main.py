"""`kafka-shell`: picks the mode from the command line and returns its exit code.

    kafka-shell --bootstrap-server h:p                       REPL
    kafka-shell --bootstrap-server h:p --command "LINE"      one command
    kafka-shell --bootstrap-server h:p --create-topic ...    one command, KIP-4 flag style
    kafka-shell --bootstrap-server h:p --file script.ksh     replay (`-` or piped stdin: stdin)
    kafka-shell sandbox --brokers 3                          serve an embedded cluster

Global options are parsed by hand (not argparse) so KIP-4's flag style can mix them freely with
the command's own options, and so that the registry alone defines what a command accepts.
"""

from __future__ import annotations

import gc
import math
import sys
from dataclasses import dataclass, field

from kafka_shell.base.errors import ShellError, UsageError, printable, shown
from kafka_shell.base.errors import suggest

USAGE_HEAD = """\
Usage: kafka-shell [GLOBAL OPTIONS] [--command "LINE" | --file SCRIPT | --COMMAND [OPTIONS]]
       kafka-shell sandbox [--brokers N] [--mode kraft|zk] [--kafka-version 4.4|3.9]
                           [--controllers N] [--port-base N] [--rack a,b,c] [--broker-config K=V]
                           [--data-dir D] [--listen H] [--listeners L,L] [--user NAME:PASSWORD]
                           [--tls-dir D] [--seed-apis]   (see kafka-shell sandbox --help)

With no command or file, kafka-shell opens the interactive shell (or replays piped stdin).

Global options:"""

GLOBAL_HELP = [
    ("--bootstrap-server H:P[,H:P]", "Brokers to connect to (alias --broker-list)"),
    ("--bootstrap-controller H:P[,H:P]", "KRaft controllers' listeners: what they serve (the quorum, "
     "features, cluster and broker configs) goes straight to the active one; alone, the shell "
     "talks to the controllers only"),
    ("--cluster NAME", "A cluster from clusters.json (see the clusters command)"),
    ("--sandbox", "Start an embedded 3-broker cluster and use it"),
    ("--kafka-version V", "--sandbox: the Kafka release it behaves as, 4.4 (default) or 3.9"),
    ("--broker-config KEY=VALUE", "--sandbox: a static broker config (repeatable), e.g. num.partitions=4"),
    ("--rack ID[,ID...]", "--sandbox: the brokers' racks, one per broker or one for all"),
    ("--seed-apis", "--sandbox: also serve the seeds' APIs no Kafka release has (GetReplicaLogInfo, "
     "designated elections)"),
    ("--command, -c LINE", "Run one command line and exit"),
    ("--file, -f SCRIPT", "Replay a script, one command a line (`-` reads stdin)"),
    ("--check SCRIPT", "Check every line of a script (`-`: stdin) as replay would run it, naming each error "
     "with its line number; nothing is sent (a --file run checks its file so first)"),
    ("--no-check", "Replay: run a file's lines without checking the whole file first"),
    ("--quiet, -q", "Replay: do not echo each command"),
    ("--continue-on-error", "Replay: run every line even after a failure"),
    ("--output, -o FORMAT", "Output format: table (default), json, jsonl or csv"),
    ("--csv-table NAME", "The table --output csv writes, by its json name (default: the first)"),
    ("--expanded", "Tables as vertical records (default: only when wider than the terminal)"),
    ("--no-pager", "Interactive shell: never page tall results through $PAGER (default less -SRXF)"),
    ("--command-config FILE", "Client properties file (security settings); Kafka's tools' older names "
     "--consumer.config, --producer.config, --admin.config, --consumer-config and --config-file work too (KIP-1147)"),
    ("-X, --command-property KEY=VALUE", "A client property (repeatable; --consumer-property and "
     "--producer-property work too)"),
    ("--timeout S", "Bound on each request, retries included, in seconds (default 10, at most 2147483)"),
    ("--yes", "Confirm destructive commands"),
    ("--debug", "Show tracebacks and debug logs"),
    ("--help, -h", "This help; `kafka-shell --command help` lists the commands"),
    ("--version", "Print the version and exit"),
]

USAGE_TAIL = """\
Secrets: other users see the command line (ps). Put passwords in a --command-config file or a \
clusters.json cluster, or write -X 'sasl.password=${ENV}' (values of -X, --command-config and \
clusters.json expand ${VAR} from the environment).

Exit codes: 0 ok, 1 failed, 2 usage error."""


def usage_text(width: int | None = None) -> str:
    """`kafka-shell --help`, wrapped to the terminal."""
    from kafka_shell.declarations.parsing import format_entries, wrap_lines
    lines = [*USAGE_HEAD.splitlines(), *format_entries(list(GLOBAL_HELP), width), "", *USAGE_TAIL.splitlines()]
    return "\n".join(wrap_lines(lines, width))


@dataclass
class Globals:
    bootstrap: str | None = None
    bootstrap_controller: str | None = None
    cluster: str | None = None
    sandbox: bool = False
    # The in-process sandbox's options (kafka-shell sandbox has the same ones).
    kafka_version: str | None = None
    broker_configs: list[str] = field(default_factory=list)
    rack: str | None = None
    seed_apis: bool = False
    command: str | None = None
    file: str | None = None
    check: str | None = None
    no_check: bool = False
    quiet: bool = False
    continue_on_error: bool = False
    output: str = "table"
    command_config: str | None = None
    x_options: list[str] = field(default_factory=list)
    timeout: float = 10.0
    yes: bool = False
    debug: bool = False
    help: bool = False
    version: bool = False
    shell: bool = False
    csv_table: str | None = None
    expanded: bool = False
    no_pager: bool = False
    command_tokens: list[str] | None = None   # KIP-4 flag style: ["create-topic", "--topic", ...]


# The pipeline's commands also read as words, after the global options or before them.
WORD_COMMANDS = ("snapshot", "analyze")

# Kafka's tools' names before KIP-1147 for a client properties file, and for one property.
KIP_1147_CONFIG_NAMES = ("--consumer.config", "--producer.config", "--admin.config", "--consumer-config", "--config-file")
KIP_1147_PROPERTY_NAMES = ("--consumer-property", "--producer-property")

# name -> (dest, takes a value); aliases share the dest.
GLOBAL_OPTIONS: dict[str, tuple[str, bool]] = {
    "--bootstrap-server": ("bootstrap", True), "--broker-list": ("bootstrap", True),
    "--bootstrap-controller": ("bootstrap_controller", True),
    "--cluster": ("cluster", True), "--sandbox": ("sandbox", False),
    "--kafka-version": ("kafka_version", True), "--broker-config": ("broker_configs", True),
    "--rack": ("rack", True), "--seed-apis": ("seed_apis", False),
    "--command": ("command", True), "-c": ("command", True),
    "--file": ("file", True), "-f": ("file", True),
    "--check": ("check", True), "--no-check": ("no_check", False),
    "--quiet": ("quiet", False), "-q": ("quiet", False),
    "--continue-on-error": ("continue_on_error", False),
    "--output": ("output", True), "-o": ("output", True),
    "--command-config": ("command_config", True), "-X": ("x_options", True),
    # KIP-1147 (Kafka 4.4): --command-config and --command-property in every tool, and the names
    # each tool had before (kafka-cluster's --config is left out: create-topic's --config owns it).
    **dict.fromkeys(KIP_1147_CONFIG_NAMES, ("command_config", True)),
    **dict.fromkeys(("--command-property", *KIP_1147_PROPERTY_NAMES), ("x_options", True)),
    "--timeout": ("timeout", True), "--yes": ("yes", False), "--debug": ("debug", False),
    "--help": ("help", False), "-h": ("help", False), "--shell": ("shell", False),
    "--version": ("version", False), "--csv-table": ("csv_table", True),
    "--expanded": ("expanded", False), "--no-pager": ("no_pager", False),
}


def flag_commands() -> list:
    """Commands usable in KIP-4's flag style (`kafka-shell --create-topic ...`): the cluster
    commands; the shell's own (help, topic, output...) and sandbox ones only make sense as lines."""
    from kafka_shell.declarations.registry import load_commands
    return sorted((c for c in load_commands().commands.values()
                   if c.family != "session" and not c.sandbox_only), key=lambda c: c.name)


def flag_command(name: str):
    """The command `--NAME` names in KIP-4's flag style (only its family is imported), or None."""
    from kafka_shell.declarations.registry import REGISTRY
    cmd = REGISTRY.get(name)
    return cmd if cmd is not None and cmd.name == name and cmd.family != "session" and not cmd.sandbox_only else None


def parse_globals(argv: list[str]) -> Globals:
    g = Globals()
    cmd = None
    given: dict[str, str] = {}   # dest -> the option that set it (a value option counts once)
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if token.startswith("-X") and len(token) > 2:
            name, eq, inline = "-X", "=", token[2:]
        if cmd is not None and name in ("--help", "-h"):
            g.command_tokens.append(token)  # type: ignore[union-attr]  # the command's help
        elif name in GLOBAL_OPTIONS and not (cmd is not None and cmd.option(name) is not None):
            dest, takes_value = GLOBAL_OPTIONS[name]
            if takes_value:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise UsageError(f"Option {name} needs a value (see kafka-shell --help)")
                    inline = argv[i]
                if dest in given and dest != "x_options":
                    raise UsageError(_twice(dest, given[dest], name))
                given[dest] = name
                _set(g, dest, name, inline)
            else:
                setattr(g, dest, True)
        elif cmd is None and token.startswith("--") and flag_command(token[2:]) is not None:
            cmd = flag_command(token[2:])
            g.command_tokens = [token[2:]]
        elif cmd is None and token in WORD_COMMANDS:  # `kafka-shell --bootstrap-server H snapshot ...`
            cmd = flag_command(token)
            g.command_tokens = [token]
        elif cmd is not None:
            g.command_tokens.append(token)  # type: ignore[union-attr]
        else:
            candidates = [*GLOBAL_OPTIONS, *(f"--{c.name}" for c in flag_commands())]
            hint = suggest(name, candidates) or " (see kafka-shell --help)"
            raise UsageError(f"Unknown option {shown(name)}{hint}")
        i += 1
    modes = [m for m in ("--command" if g.command is not None else "", "--file" if g.file is not None else "",
                         "--check" if g.check is not None else "", f"--{cmd.name}" if cmd else "") if m]
    if len(modes) > 1:
        raise UsageError(f"Options {' and '.join(modes)} cannot be used together (pick one)")
    return g


# What to do instead of giving a value option twice (the last one used to win, silently).
TWICE_HINTS = {"command": "put several commands in one, separated by ;",
               "bootstrap": "list several brokers in one, separated by commas"}


def _twice(dest: str, first: str, second: str) -> str:
    same = first if first == second else f"{first} and {second}"
    return f"Option {same} given twice: {TWICE_HINTS.get(dest, 'give it once')}"


def _set(g: Globals, dest: str, name: str, value: str) -> None:
    if dest == "x_options":
        g.x_options.append(value)
    elif dest == "broker_configs":
        g.broker_configs.append(value)
    elif dest == "csv_table":
        from kafka_shell.declarations.registry import table_name
        try:
            g.csv_table = table_name(value)
        except ValueError as exc:
            raise UsageError(f'Invalid value "{shown(value)}" for {name}: expected {exc}') from None
    elif dest == "timeout":
        g.timeout = _seconds(value, name)
    elif dest == "output":
        from kafka_shell.declarations.render import FORMATS
        if value not in FORMATS:
            raise UsageError(f'Invalid value "{shown(value)}" for {name}: choose one of {", ".join(FORMATS)}')
        g.output = value
    else:
        setattr(g, dest, value)


# Timeouts go to Kafka in milliseconds, in int32 fields.
MAX_TIMEOUT_S = (2**31 - 1) // 1000


def _seconds(value: str, name: str) -> float:
    """A timeout in seconds, finite and within what Kafka's int32 millisecond fields hold."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (0.001 <= seconds <= MAX_TIMEOUT_S):  # NaN fails every comparison
        raise UsageError(f'Invalid value "{shown(value)}" for {name}: expected a number of seconds '
                         f"from 0.001 to {MAX_TIMEOUT_S}")
    return seconds


def build_target(g: Globals, sandbox=None):
    """Where to connect, from --bootstrap-server, --cluster, --sandbox or the current cluster."""
    from kafka_shell.connection.session import Target
    props: dict[str, str] = {}
    name = None
    controllers = g.bootstrap_controller
    if g.bootstrap:
        bootstrap = g.bootstrap
    elif sandbox is not None:
        bootstrap = sandbox.bootstrap
    elif g.bootstrap_controller is not None and g.cluster is None:
        bootstrap = ""   # controllers only (KIP-919)
    else:
        from kafka_shell.connection import clusters
        name = g.cluster if g.cluster is not None else clusters.current()
        if name is None:
            return None
        bootstrap, props, listed = clusters.get(name)
        if g.cluster is None:   # chosen by an earlier use-cluster, not by this command line: say so
            sys.stderr.write(f'Using cluster "{name}", the current one (use-cluster chose it; --cluster or '
                             "--bootstrap-server picks another).\n")
        controllers = controllers or listed
    from kafka_shell.connection import client_config
    if bootstrap:
        client_config.check_bootstrap(bootstrap, f'cluster "{name}"' if name else "--bootstrap-server")
    if controllers is not None:
        client_config.check_bootstrap(controllers, f'cluster "{name}"' if name and not g.bootstrap_controller
                                      else "--bootstrap-controller")
    if g.command_config is not None:
        file_props = client_config.load_properties(g.command_config)
        exposed_file = client_config.exposed_file_warning(g.command_config, file_props)
        if exposed_file:
            sys.stderr.write(exposed_file + "\n")
        props.update(client_config.expand_all(file_props, f"--command-config {g.command_config}"))
    if g.x_options:
        x_props = client_config.parse_x_options(g.x_options)
        exposed = client_config.clear_secrets(x_props)
        if exposed:
            sys.stderr.write(client_config.secrets_warning(exposed) + "\n")
        props.update(client_config.expand_all(x_props, "-X"))
    client_config.validate(props)
    return Target(bootstrap, props, cluster=name, timeout_s=g.timeout, bootstrap_controllers=controllers)


def sandbox_parser():
    """The options of `kafka-shell sandbox`, from the sandbox's own entry point (for the shell
    completion files, which complete them)."""
    from kafka_shell.sandbox.cli import parser
    return parser()


def run(argv: list[str]) -> int:
    if argv[:1] == ["sandbox"]:  # the sandbox server has its own entry point (and options)
        from kafka_shell.sandbox.cli import serve
        return serve(argv[1:])
    g = parse_globals(argv)
    if g.help:
        print(usage_text())
        return 0
    if g.version:
        from kafka_shell import __version__
        print(f"kafka-shell {__version__}")
        return 0
    if g.debug:
        import logging
        logging.basicConfig(level=logging.DEBUG, format="debug: %(name)s: %(message)s")
    if g.csv_table and g.output != "csv":
        raise UsageError("--csv-table picks the table of --output csv: add --output csv (or leave --csv-table out)")
    if g.bootstrap and g.cluster:
        raise UsageError("Options --bootstrap-server and --cluster cannot be used together (pick one)")
    sandbox_options = [name for name, given in (("--kafka-version", g.kafka_version), ("--broker-config", g.broker_configs),
                                                ("--rack", g.rack), ("--seed-apis", g.seed_apis)) if given]
    if sandbox_options and not g.sandbox:
        raise UsageError(f"{sandbox_options[0]} configures the in-process sandbox: add --sandbox "
                         "(or give it to kafka-shell sandbox)")
    from kafka_shell.connection.session import Session
    session = Session(output=g.output, yes=g.yes, debug=g.debug, pager=not g.no_pager,
                      expanded="on" if g.expanded else "auto", csv_table=g.csv_table)
    try:
        if g.check is not None:   # reads the script only: no cluster
            from kafka_shell.face import modes
            return modes.check(session, g.check)
        if g.sandbox:
            from kafka_shell.sandbox.cli import sandbox_broker_configs, sandbox_racks
            session.sandbox = _start_sandbox(kafka_version=g.kafka_version, configs=sandbox_broker_configs(g.broker_configs),
                                             racks=sandbox_racks(g.rack), seed_apis=g.seed_apis)
        session.target = build_target(g, session.sandbox)
        from kafka_shell.face import modes
        if g.command_tokens is not None:
            import shlex
            return modes.oneshot(session, shlex.join(g.command_tokens))
        if g.command is not None:
            return modes.oneshot(session, g.command)
        if g.file is not None:
            return modes.replay(session, g.file, g.quiet, g.continue_on_error, check_first=not g.no_check)
        if not g.shell and modes.stdin_is_piped():
            return modes.replay(session, "-", g.quiet, g.continue_on_error)
        return interactive(session)
    finally:
        session.close()
        if session.sandbox is not None:
            session.sandbox.stop()


def interactive(session) -> int:
    session.interactive = True
    session.stderr.write(session.conn.greeting() + "\n")  # connects now
    from kafka_shell.face.repl import run_repl  # prompt_toolkit only loads here
    return run_repl(session)


def _start_sandbox(**options):
    """The in-process sandbox (--sandbox): 3 brokers, with the options the command line gave."""
    from kafka_shell.sandbox.server import Sandbox
    try:
        return Sandbox(brokers=3, **options).start()
    except ValueError as exc:
        raise UsageError(f"Cannot start the sandbox: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    process = argv is None   # the shell's own process (kafka_shell/face/launch.py set it up)
    if argv is None:
        argv = sys.argv[1:]
    try:
        code = run(argv)
    except ShellError as exc:
        sys.stderr.write(printable(str(exc)) + "\n")
        code = exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        code = 130
    except Exception as exc:  # noqa: BLE001 - one line unless --debug asks for the traceback
        if "--debug" in argv:
            raise
        sys.stderr.write(printable(f"Internal error: {type(exc).__name__}: {exc} (run with --debug for details)") + "\n")
        code = 1
    sys.stdout.flush()
    if process:
        # The process ends: what is alive now (modules, classes, what the command read) goes with
        # it. Frozen, it is left out of the collector's last walks at exit (~10 ms of a one-shot
        # line); objects are still freed as usual.
        gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
