"""What a sandbox is started with: `SandboxConfig`, checked when made (a ValueError says what is
wrong), shared by `Sandbox` (Python callers, tests) and `kafka-shell sandbox` (sandbox/cli.py).

A cluster kept in `data_dir` comes back as it was: `brokers`, `mode`, `controllers`, `port_base`,
`log_dirs_per_broker` and `host` must match it (persist.check_arguments, once the state is read).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_shell.sandbox import security, tls
from kafka_shell.sandbox.model import KRAFT, MODES, ZK

# A listener's name is its security protocol (Kafka's default listener.security.protocol.map).
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
PLAINTEXT = "PLAINTEXT"
DEFAULT_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class SandboxConfig:
    """`brokers` (default 3). `mode`: "kraft" (the default: `controllers` voters of their own,
    default 1, with ids 100, 101..., see `server.controller_id_base`) or "zk" (the controller is
    a broker). Ports: free ones, or from `port_base`: brokers first, then controllers, then the
    control listener. `host`: the listen address (default 127.0.0.1). `serve_control`: serve the
    control endpoint (`sandbox.control`) for other processes. `dynamic_quorum`: the controllers
    form a dynamic quorum (kraft.version 1, KIP-853: `kafka-storage format
    --initial-controllers`), whose voters AddRaftVoter and RemoveRaftVoter change; without it a
    static one (kraft.version 0), as Kafka's default format. `racks`: one per broker or one for
    all; `hosts`: the brokers' machine names (KIP-426's host -> id mapping); `log_dirs_per_broker`:
    each broker's number of log dirs (log.dirs, JBOD; sandbox/directories.py; default 1).

    Security (see docs/security.md): `listeners`, names from LISTENERS (default one PLAINTEXT),
    each on its own port per broker (the first on the broker's port); `sasl_mechanisms` the SASL
    listeners enable (default PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); `users` name -> password for
    PLAIN and SCRAM; `tls_dir` where the CA (`ca.pem`, for clients) and broker certificate are
    kept or made (default a new temporary directory, or D/tls with a data dir);
    `ssl_client_auth` (none, requested, required) for the SSL listener; `reauth_ms`:
    connections.max.reauth.ms (KIP-368). OAUTHBEARER takes tokens signed by `oauth_jwks` (a dict
    or a JSON file), else unsecured ones, with Kafka's settings in `oauth_options`; GSSAPI logs
    in with `kerberos_keytab` and `kerberos_principal`. `authorizer`: check ACLs as Kafka's
    StandardAuthorizer does, `super_users` ("User:admin") bypassing them
    (`allow_everyone_if_no_acl_found`: a resource without ACLs is open).

    Kafka's behaviour (`kafka_shell.protocol.definitions`): `kafka_version` the release the sandbox
    follows ("4.4", the default, or "3.9"; zk mode implies and needs 3.9); `configs` its static
    broker configs (server.properties: `--broker-config`); `seed_apis` also serves the seeds'
    APIs no Kafka release has (KAFKA-20098's GetReplicaLogInfo and designated ElectLeaders v3)."""
    brokers: int | None = None
    port_base: int | None = None
    racks: list[str] | None = None
    host: str | None = None
    cluster_id: str | None = None
    configs: dict[str, str] | None = None
    data_dir: str | None = None
    mode: str | None = None
    controllers: int | None = None
    serve_control: bool = False
    hosts: list[str] | None = None
    listeners: list[str] | None = None
    sasl_mechanisms: list[str] | None = None
    users: dict[str, str] | None = None
    tls_dir: str | None = None
    reauth_ms: int | None = None
    ssl_client_auth: str = "none"
    oauth_jwks: dict | str | None = None
    oauth_options: dict[str, str] | None = None
    kerberos_keytab: str | None = None
    kerberos_principal: str | None = None
    authorizer: bool = False
    super_users: list[str] | None = None
    allow_everyone_if_no_acl_found: bool = False
    kafka_version: str | None = None
    seed_apis: bool = False
    dynamic_quorum: bool = False
    log_dirs_per_broker: int | None = None

    def __post_init__(self) -> None:
        listeners = self.listener_names
        if [n for n in listeners if n not in LISTENERS] or not listeners or len(set(listeners)) != len(listeners):
            raise ValueError(f"bad listeners {','.join(listeners)}: name each of {', '.join(LISTENERS)} at most once")
        unsupported = [m for m in self.mechanisms if m not in security.SERVER_MECHANISMS]
        if unsupported:
            raise ValueError(f"unsupported SASL mechanism {unsupported[0]}: use {', '.join(security.SERVER_MECHANISMS)}")
        if self.ssl_client_auth not in tls.CLIENT_AUTH:
            raise ValueError(f"bad ssl.client.auth {self.ssl_client_auth!r}: use {', '.join(tls.CLIENT_AUTH)}")
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}: use kraft or zk")
        if self.mode == ZK and (self.controllers is not None or self.dynamic_quorum):
            raise ValueError("a zk-mode sandbox has no controller quorum (its controller is a broker)")
        if self.oauth_jwks is not None or self.oauth_options:
            from kafka_shell.sandbox.oauthbearer import validator
            validator(self.oauth_jwks, dict(self.oauth_options or {}))  # bad settings fail here, not at a login

    @property
    def listener_names(self) -> list[str]:
        return list(self.listeners or [PLAINTEXT])

    @property
    def mechanisms(self) -> list[str]:
        return list(self.sasl_mechanisms or DEFAULT_MECHANISMS)

    def shape(self) -> tuple[int, str, int]:
        """(brokers, mode, controllers) of a new cluster, checked against racks and hosts."""
        brokers = 3 if self.brokers is None else self.brokers
        mode = KRAFT if self.mode is None else self.mode
        controllers = 1 if self.controllers is None else self.controllers
        if brokers < 1:
            raise ValueError("a sandbox needs at least one broker")
        if self.racks and len(self.racks) not in (1, brokers):
            raise ValueError(f"--rack needs one rack or {brokers} racks, got {len(self.racks)}")
        if self.hosts and len(self.hosts) != brokers:
            raise ValueError(f"--hosts needs {brokers} host names (one per broker), got {len(self.hosts)}")
        if self.log_dirs_per_broker is not None and not 1 <= self.log_dirs_per_broker <= 64:
            raise ValueError(f"--log-dirs-per-broker takes 1 to 64, not {self.log_dirs_per_broker}")
        if mode == KRAFT and controllers < 1:
            raise ValueError("a KRaft sandbox needs at least one controller")
        return brokers, mode, controllers if mode == KRAFT else 0
