"""`kafka-shell sandbox`: the sandbox server's own entry point and options (main.py only
dispatches here). It serves an embedded cluster until Ctrl-C, SIGTERM or SIGHUP."""

from __future__ import annotations

import re
import sys

from kafka_shell.base.env import ENV_REF, expand_env
from kafka_shell.base.errors import ShellError, UsageError, shown

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


def parser():
    """The options of `kafka-shell sandbox` (the shell completion files are made from them too)."""
    import argparse

    from kafka_shell.protocol.definitions import DEFAULT_RELEASE, RELEASES, ZK_RELEASE
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
    p.add_argument("--log-dirs-per-broker", type=int, default=None, metavar="N",
                   help="log dirs of each broker (log.dirs, JBOD): replicas are spread over them and "
                        "AlterReplicaLogDirs moves them between them (default 1)")
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
    return p


def serve(argv: list[str]) -> int:
    """`kafka-shell sandbox`: serve an embedded cluster until Ctrl-C, SIGTERM or SIGHUP."""
    import contextlib
    import errno
    import signal
    import threading

    args = parser().parse_args(argv)
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
    from kafka_shell.sandbox.config import SandboxConfig
    from kafka_shell.sandbox.persist import StateError
    from kafka_shell.sandbox.server import Sandbox
    try:
        config = SandboxConfig(brokers=args.brokers, port_base=args.port_base, racks=sandbox_racks(args.rack),
                               kafka_version=args.kafka_version, configs=configs, seed_apis=args.seed_apis,
                               hosts=args.hosts.split(",") if args.hosts else None,
                               host=args.listen, data_dir=args.data_dir, mode=args.mode,
                               controllers=args.controllers, dynamic_quorum=args.dynamic_quorum, serve_control=True,
                               log_dirs_per_broker=args.log_dirs_per_broker,
                               listeners=_upper_list(args.listeners),
                               sasl_mechanisms=_upper_list(args.sasl_mechanisms),
                               users=users, tls_dir=args.tls_dir, ssl_client_auth=args.ssl_client_auth,
                               reauth_ms=args.connections_max_reauth_ms, oauth_jwks=args.oauth_jwks,
                               kerberos_keytab=args.kerberos_keytab,
                               kerberos_principal=args.kerberos_principal, authorizer=args.authorizer,
                               super_users=parse_super_users(args.super_users or ""),
                               allow_everyone_if_no_acl_found=args.allow_everyone_if_no_acl_found)
        sandbox = Sandbox(config).start()
    except StateError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE and args.port_base:
            raise UsageError(f"Cannot start the sandbox: {_busy_port(args.listen or '127.0.0.1', args.port_base)} is in "
                             "use: choose another --port-base (or leave it out for free ports)") from None
        raise UsageError(f"Cannot start the sandbox: {exc.strerror or exc}") from None
    except ValueError as exc:
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


def _busy_port(host: str, base: int) -> str:
    """The first port from `base` on that something else holds (the sandbox's own are closed again)."""
    import socket
    for port in range(base, min(base + 256, 65536)):
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                return f"port {port}"
    return f"a port from {base}"


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


def _upper_list(text: str | None) -> list[str] | None:
    return [part.strip().upper() for part in text.split(",") if part.strip()] if text else None


def _sandbox_user(item: str) -> tuple[str, str]:
    name, sep, password = item.partition(":")
    if not sep or not name or not password:
        raise UsageError("--user expects NAME:PASSWORD (e.g. --user alice:secret, or "
                         "--user 'alice:${ALICE_PASSWORD}')")
    if not ENV_REF.fullmatch(password.strip()):
        variable = re.sub(r"\W", "_", name).upper() + "_PASSWORD"
        sys.stderr.write(f"Warning: --user {name}:... puts a password on the command line, visible to other "
                         f"users (ps): write --user '{name}:${{{variable}}}' and export {variable}.\n")
    return name, expand_env(password, f"--user {name}")
