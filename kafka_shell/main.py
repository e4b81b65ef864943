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

import math
import re
import sys
from dataclasses import dataclass, field

from kafka_shell.errors import ShellError, UsageError, printable, shown
from kafka_shell.parsing import suggest

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
     "cluster and broker configs) goes straight to the active one"),
    ("--cluster NAME", "A cluster from clusters.json (see the clusters command)"),
    ("--sandbox", "Start an embedded 3-broker cluster and use it"),
    ("--kafka-version V", "--sandbox: the Kafka release it behaves as, 4.4 (default) or 3.9"),
    ("--broker-config KEY=VALUE", "--sandbox: a static broker config (repeatable), e.g. num.partitions=4"),
    ("--rack ID[,ID...]", "--sandbox: the brokers' racks, one per broker or one for all"),
    ("--seed-apis", "--sandbox: also serve the seeds' APIs no Kafka release has (GetReplicaLogInfo, "
     "designated elections)"),
    ("--command, -c LINE", "Run one command line and exit"),
    ("--file, -f SCRIPT", "Replay a script, one command a line (`-` reads stdin)"),
    ("--quiet, -q", "Replay: do not echo each command"),
    ("--continue-on-error", "Replay: run every line even after a failure"),
    ("--output, -o FORMAT", "Output format: table (default), json, jsonl or csv"),
    ("--csv-table NAME", "The table --output csv writes, by its json name (default: the first)"),
    ("--expanded", "Tables as vertical records (default: only when wider than the terminal)"),
    ("--no-pager", "Interactive shell: never page tall results through $PAGER (default less -SRXF)"),
    ("--command-config FILE", "Client properties file (security settings)"),
    ("-X KEY=VALUE", "A client property (repeatable)"),
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
    from kafka_shell.parsing import format_entries, wrap_lines
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


# name -> (dest, takes a value); aliases share the dest.
GLOBAL_OPTIONS: dict[str, tuple[str, bool]] = {
    "--bootstrap-server": ("bootstrap", True), "--broker-list": ("bootstrap", True),
    "--bootstrap-controller": ("bootstrap_controller", True),
    "--cluster": ("cluster", True), "--sandbox": ("sandbox", False),
    "--kafka-version": ("kafka_version", True), "--broker-config": ("broker_configs", True),
    "--rack": ("rack", True), "--seed-apis": ("seed_apis", False),
    "--command": ("command", True), "-c": ("command", True),
    "--file": ("file", True), "-f": ("file", True),
    "--quiet": ("quiet", False), "-q": ("quiet", False),
    "--continue-on-error": ("continue_on_error", False),
    "--output": ("output", True), "-o": ("output", True),
    "--command-config": ("command_config", True), "-X": ("x_options", True),
    "--timeout": ("timeout", True), "--yes": ("yes", False), "--debug": ("debug", False),
    "--help": ("help", False), "-h": ("help", False), "--shell": ("shell", False),
    "--version": ("version", False), "--csv-table": ("csv_table", True),
    "--expanded": ("expanded", False), "--no-pager": ("no_pager", False),
}


def flag_commands() -> list:
    """Commands usable in KIP-4's flag style (`kafka-shell --create-topic ...`): the cluster
    commands; the shell's own (help, topic, output...) and sandbox ones only make sense as lines."""
    from kafka_shell.registry import load_commands
    return sorted((c for c in load_commands().commands.values()
                   if c.family != "session" and not c.sandbox_only), key=lambda c: c.name)


def flag_command(name: str):
    return next((c for c in flag_commands() if c.name == name), None)


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
        if name in GLOBAL_OPTIONS and not (cmd is not None and cmd.option(name) is not None):
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
        elif cmd is not None:
            g.command_tokens.append(token)  # type: ignore[union-attr]
        else:
            candidates = [*GLOBAL_OPTIONS, *(f"--{c.name}" for c in flag_commands())]
            hint = suggest(name, candidates) or " (see kafka-shell --help)"
            raise UsageError(f"Unknown option {shown(name)}{hint}")
        i += 1
    modes = [m for m in ("--command" if g.command is not None else "", "--file" if g.file is not None else "",
                         f"--{cmd.name}" if cmd else "") if m]
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
        from kafka_shell.registry import table_name
        try:
            g.csv_table = table_name(value)
        except ValueError as exc:
            raise UsageError(f'Invalid value "{shown(value)}" for {name}: expected {exc}') from None
    elif dest == "timeout":
        g.timeout = _seconds(value, name)
    elif dest == "output":
        from kafka_shell.render import FORMATS
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
    from kafka_shell.session import Target
    props: dict[str, str] = {}
    name = None
    if g.bootstrap:
        bootstrap = g.bootstrap
    elif sandbox is not None:
        bootstrap = sandbox.bootstrap
    else:
        from kafka_shell import clusters
        name = g.cluster if g.cluster is not None else clusters.current()
        if name is None:
            return None
        bootstrap, props = clusters.get(name)
    from kafka_shell import client_config
    client_config.check_bootstrap(bootstrap, f'cluster "{name}"' if name else "--bootstrap-server")
    if g.bootstrap_controller is not None:
        client_config.check_bootstrap(g.bootstrap_controller, "--bootstrap-controller")
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
    return Target(bootstrap, props, cluster=name, timeout_s=g.timeout,
                  bootstrap_controllers=g.bootstrap_controller)


def run(argv: list[str]) -> int:
    if argv[:1] == ["sandbox"]:
        return serve_sandbox(argv[1:])
    if argv[:1] in (["snapshot"], ["analyze"]):  # the pipeline's commands also read as words
        argv = [f"--{argv[0]}", *argv[1:]]
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
    from kafka_shell.session import Session
    session = Session(output=g.output, yes=g.yes, debug=g.debug, pager=not g.no_pager,
                      expanded="on" if g.expanded else "auto", csv_table=g.csv_table)
    try:
        if g.sandbox:
            session.sandbox = _start_sandbox(kafka_version=g.kafka_version, configs=sandbox_broker_configs(g.broker_configs),
                                             racks=sandbox_racks(g.rack), seed_apis=g.seed_apis)
        session.target = build_target(g, session.sandbox)
        from kafka_shell import modes
        if g.command_tokens is not None:
            import shlex
            return modes.oneshot(session, shlex.join(g.command_tokens))
        if g.command is not None:
            return modes.oneshot(session, g.command)
        if g.file is not None:
            return modes.replay(session, g.file, g.quiet, g.continue_on_error)
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
    from kafka_shell.repl import run_repl  # prompt_toolkit only loads here
    return run_repl(session)


SANDBOX_EPILOG = """\
Prints three lines on stdout, then serves until Ctrl-C, SIGTERM or SIGHUP (each stops it
cleanly; with --data-dir it saves the state first, and a second Ctrl-C does not cut that short):
  bootstrap.servers=H:P,...      the broker listeners (give them to --bootstrap-server)
  bootstrap.controllers=H:P,...  the KRaft controller listeners (empty in zk mode)
  control=H:P                    the control endpoint
With --listeners, then bootstrap.servers.NAME=H:P,... per listener (bootstrap.servers is the
first one's), and with a TLS listener ssl.ca.location=D/ca.pem. See docs/security.md.

Fault injection from another shell: kafka-shell --bootstrap-server <bootstrap.servers>
--command "sandbox stop-broker 2" (also start-broker, kill-controller, stop-controller ID,
start-controller ID, delay, fail, heal, status; `sandbox --help` in the shell lists them). The
shell finds the control endpoint by asking a broker listener with a sandbox-only API key, then
talks to the control listener; each command returns once the cluster is as it says.
With every broker stopped, set KAFKA_SHELL_SANDBOX_CONTROL=<control> for one-shot commands.

KRaft mode (default) runs like Kafka 3.9/4.x: a controller quorum with ids 100, 101, ... (1000
and up with 100 brokers or more) on listeners of their own, brokers forward admin requests to
the active controller and name a random live broker as controller_id. zk mode runs like
ZooKeeper-era Kafka: the controller is a broker. See docs/sandbox.md."""


def serve_sandbox(argv: list[str]) -> int:
    """`kafka-shell sandbox`: serve an embedded cluster until Ctrl-C, SIGTERM or SIGHUP."""
    import argparse
    import contextlib
    import signal
    import threading

    from kafka_shell.definitions import DEFAULT_RELEASE, RELEASES, ZK_RELEASE
    from kafka_shell.sandbox.model import MODES
    p = argparse.ArgumentParser(prog="kafka-shell sandbox", description="Serve an embedded Kafka cluster "
                                "on 127.0.0.1 or --listen (real Kafka wire protocol).",
                                epilog=SANDBOX_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", type=int, default=None, metavar="N", help="number of brokers, ids 1..N (default 3)")
    p.add_argument("--mode", choices=MODES, default=None,
                   help="kraft: a controller quorum of its own (default); zk: the controller is a broker")
    p.add_argument("--controllers", type=int, default=None, metavar="N",
                   help="KRaft controller voters, ids 100, 101, ... (default 1; not with --mode zk)")
    p.add_argument("--dynamic-quorum", action="store_true",
                   help="the controllers form a dynamic quorum (KIP-853, kraft.version 1, as kafka-storage "
                        "format --initial-controllers): add-controller/remove-controller can change it")
    p.add_argument("--port-base", type=int, default=None, metavar="P",
                   help="listen on P.. (brokers, then controllers, then the control endpoint) "
                        "instead of free ports")
    p.add_argument("--kafka-version", choices=RELEASES, default=None,
                   help=f"the Kafka release to behave as: its API versions, features and configs (default "
                        f"{DEFAULT_RELEASE}; --mode zk implies {ZK_RELEASE}, which Kafka 4.0 left behind)")
    p.add_argument("--rack", "--racks", dest="rack", default=None, metavar="ID[,ID...]",
                   help="the brokers' racks (broker.rack): one per broker, or one for all")
    p.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a static broker config, as in Kafka's server.properties (repeatable): e.g. "
                        "num.partitions=4, default.replication.factor=3")
    p.add_argument("--seed-apis", action="store_true",
                   help="also serve the seeds' APIs no Kafka release has: KAFKA-20098's GetReplicaLogInfo "
                        "and designated elections (ElectLeaders v3)")
    p.add_argument("--hosts", default=None, metavar="H1,H2,...",
                   help="the brokers' machine names, one per broker (default broker-1.sandbox, ...); "
                        "they key KIP-426's host -> id mapping, the advertised address stays loopback")
    p.add_argument("--data-dir", default=None, metavar="D",
                   help="keep the cluster in D: every acknowledged change survives a crash (kill -9); "
                        "a kept cluster comes back with its mode, nodes and ports, and --brokers, "
                        "--mode, --controllers and --port-base must match it")
    p.add_argument("--listen", default=None, metavar="H",
                   help="address to listen on (default 127.0.0.1; a kept cluster must be on loopback "
                        "unless this names its address)")
    p.add_argument("--listeners", default=None, metavar="L,L",
                   help="listeners, each on its own port per broker: PLAINTEXT, SSL, SASL_PLAINTEXT, "
                        "SASL_SSL (default PLAINTEXT; the banner prints each one's bootstrap list)")
    p.add_argument("--sasl-mechanisms", default=None, metavar="M,M",
                   help="SASL mechanisms of the SASL listeners (default PLAIN,SCRAM-SHA-256,SCRAM-SHA-512)")
    p.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD",
                   help="a user who logs in with PLAIN and SCRAM (repeatable; ${VAR} takes the "
                        "password from the environment)")
    p.add_argument("--tls-dir", default=None, metavar="D",
                   help="where the CA (ca.pem: give it to clients as ssl.ca.location) and the broker "
                        "certificate are kept, made when missing (default: a new temporary directory)")
    p.add_argument("--ssl-client-auth", choices=("none", "requested", "required"), default="none",
                   help="ssl.client.auth of the SSL listener: client certificates (mutual TLS)")
    p.add_argument("--connections-max-reauth-ms", type=int, default=None, metavar="MS",
                   help="the longest SASL session (KIP-368): clients must log in again before it ends")
    p.add_argument("--oauth-jwks", default=None, metavar="FILE",
                   help="OAUTHBEARER: accept tokens signed by these keys (a JWKS file); default: "
                        "unsecured tokens, as Kafka's default validator")
    p.add_argument("--kerberos-keytab", default=None, metavar="FILE",
                   help="GSSAPI: the brokers' keytab")
    p.add_argument("--kerberos-principal", default=None, metavar="NAME",
                   help="GSSAPI: the brokers' service principal (e.g. kafka/localhost@REALM)")
    p.add_argument("--authorizer", action="store_true",
                   help="check ACLs as Kafka's StandardAuthorizer does (manage them with create-acls)")
    p.add_argument("--super-users", default=None, metavar="'User:a;User:b'",
                   help="principals the authorizer always allows (Kafka's super.users); needs --authorizer")
    p.add_argument("--allow-everyone-if-no-acl-found", action="store_true",
                   help="a resource with no ACL is open to everyone; needs --authorizer")
    p.add_argument("--repair", action="store_true",
                   help="with --data-dir only: truncate the first damaged journal at its damage, after "
                        "keeping a copy (and the journals after it) in D/damaged-TIME/, then exit")
    args = p.parse_args(argv)
    if args.repair:
        return _repair_sandbox(args.data_dir, argv)
    if (args.super_users is not None or args.allow_everyone_if_no_acl_found) and not args.authorizer:
        raise UsageError("--super-users and --allow-everyone-if-no-acl-found need --authorizer")
    users = dict(_sandbox_user(item) for item in args.user)
    for option, given in (("--controllers", args.controllers is not None), ("--dynamic-quorum", args.dynamic_quorum)):
        if args.mode == "zk" and given:
            raise UsageError(f"{option} needs --mode kraft (a zk-mode controller is a broker)")
    configs = sandbox_broker_configs(args.broker_config)
    from kafka_shell.sandbox.authorizer import parse_super_users
    from kafka_shell.sandbox.persist import StateError
    from kafka_shell.sandbox.server import Sandbox
    try:
        sandbox = Sandbox(brokers=args.brokers, port_base=args.port_base, racks=sandbox_racks(args.rack),
                          kafka_version=args.kafka_version, configs=configs, seed_apis=args.seed_apis,
                          hosts=args.hosts.split(",") if args.hosts else None,
                          host=args.listen, data_dir=args.data_dir, mode=args.mode,
                          controllers=args.controllers, dynamic_quorum=args.dynamic_quorum, serve_control=True,
                          listeners=_upper_list(args.listeners), sasl_mechanisms=_upper_list(args.sasl_mechanisms),
                          users=users, tls_dir=args.tls_dir, ssl_client_auth=args.ssl_client_auth,
                          reauth_ms=args.connections_max_reauth_ms, oauth_jwks=args.oauth_jwks,
                          kerberos_keytab=args.kerberos_keytab,
                          kerberos_principal=args.kerberos_principal, authorizer=args.authorizer,
                          super_users=parse_super_users(args.super_users or ""),
                          allow_everyone_if_no_acl_found=args.allow_everyone_if_no_acl_found).start()
    except StateError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(f"Cannot start the sandbox: {exc}") from None
    stop = threading.Event()

    def on_signal(*_: object) -> None:
        if stop.is_set() and args.data_dir:
            with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
                sys.stderr.write(f"saving state to {args.data_dir}; please wait\n")
        stop.set()

    # Ctrl-C, kill and a closed terminal all stop cleanly; a second one does not cut the save short.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    print(f"bootstrap.servers={sandbox.bootstrap}", flush=True)
    print(f"bootstrap.controllers={sandbox.bootstrap_controllers}", flush=True)
    print(f"control={sandbox.control_address}", flush=True)
    # After the three lines scripts already read: the secured listeners.
    if sandbox.listeners != ["PLAINTEXT"]:
        for listener in sandbox.listeners:
            print(f"bootstrap.servers.{listener}={sandbox.bootstrap_for(listener)}", flush=True)
    if sandbox.tls_dir:
        print(f"ssl.ca.location={sandbox.tls_dir}/ca.pem", flush=True)
    quorum = (f"{len(sandbox.controller_ids)} controller(s) at {sandbox.bootstrap_controllers}"
              if sandbox.mode == "kraft" else "the controller on a broker")
    auth = ""
    if sandbox.authorizer is not None:
        supers = ", ".join(sorted(sandbox.authorizer.super_users)) or "none"
        auth = f"ACLs checked (super users: {supers}), "
    seeds = ", with the seeds' APIs" if sandbox.seed_apis else ""
    sys.stderr.write(f"Sandbox cluster (Kafka {sandbox.cluster.kafka_version}, {sandbox.mode} mode{seeds}) with "
                     f"{len(sandbox.cluster.brokers)} broker(s) "
                     f"at {sandbox.bootstrap}, {quorum}, {auth}control endpoint {sandbox.control_address}; "
                     "Ctrl-C stops it.\n")
    while not stop.wait(0.5):
        pass
    try:
        sandbox.stop()
    except OSError as exc:
        raise ShellError(f"Cannot save the sandbox state to {args.data_dir}: {exc}") from None
    return 0


def _repair_sandbox(data_dir: str | None, argv: list[str]) -> int:
    others = [a for a in argv if a.startswith("-") and a.split("=", 1)[0] not in ("--repair", "--data-dir")]
    if data_dir is None or others:
        raise UsageError("--repair takes only --data-dir D (kafka-shell sandbox --data-dir D --repair)")
    from kafka_shell.sandbox import journal
    from kafka_shell.sandbox.persist import StateError
    try:
        sys.stderr.write(journal.repair(data_dir) + "\n")
    except StateError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise ShellError(f"Cannot repair {data_dir}: {exc.strerror or exc}") from None
    return 0


def sandbox_broker_configs(items: list[str]) -> dict[str, str]:
    """--broker-config KEY=VALUE, repeated: the sandbox's static broker configs."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--broker-config expects KEY=VALUE, not {shown(item)} (e.g. --broker-config num.partitions=4)")
        out[key.strip()] = value.strip()
    return out


def sandbox_racks(text: str | None) -> list[str] | None:
    """--rack ID[,ID...]: one rack per broker, or one for all."""
    if text is None:
        return None
    racks = [r.strip() for r in text.split(",")]
    if not all(racks):
        raise UsageError(f"--rack expects rack ids separated by commas, not {shown(text)} (e.g. --rack a,b,c)")
    return racks


def _start_sandbox(**options):
    """The in-process sandbox (--sandbox): 3 brokers, with the options the command line gave."""
    from kafka_shell.sandbox.server import Sandbox
    try:
        return Sandbox(brokers=3, **options).start()
    except ValueError as exc:
        raise UsageError(f"Cannot start the sandbox: {exc}") from None


def _upper_list(text: str | None) -> list[str] | None:
    return [part.strip().upper() for part in text.split(",") if part.strip()] if text else None


def _sandbox_user(item: str) -> tuple[str, str]:
    from kafka_shell.client_config import ENV_REF, expand_env
    name, sep, password = item.partition(":")
    if not sep or not name or not password:
        raise UsageError("--user expects NAME:PASSWORD (e.g. --user alice:secret, or "
                         "--user 'alice:${ALICE_PASSWORD}')")
    if not ENV_REF.fullmatch(password.strip()):
        variable = re.sub(r"\W", "_", name).upper() + "_PASSWORD"
        sys.stderr.write(f"Warning: --user {name}:... puts a password on the command line, visible to other "
                         f"users (ps): write --user '{name}:${{{variable}}}' and export {variable}.\n")
    return name, expand_env(password, f"--user {name}")


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        # A real process: kio registers hypothesis strategies for its types whenever hypothesis
        # is importable (it is, in a venv with the test tools), which costs ~0.1 s of start-up
        # that the shell never needs. Marking it absent makes kio skip it.
        sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
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
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
