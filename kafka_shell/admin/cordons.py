"""Cordoned log dirs (KIP-1066, Kafka 4.3+): a broker's dynamic `cordoned.log.dirs` config (some of
its log dirs, or `*` for all) keeps new replicas off them. The broker puts no new replica in a
cordoned dir; once every dir of a broker is cordoned its heartbeat tells the controller, which then
places no new partition there and refuses a reassignment that names it (INVALID_REPLICA_ASSIGNMENT,
"... but all its log directories are cordoned"). Replicas already there stay and serve.

Kafka 4.4 (read from its sources): the config is per broker only (no cluster-wide default), set
through the broker itself, which checks each entry is one of its log.dirs; the controller refuses
it below metadata.version 4.3-IV0; set straight at a controller (--bootstrap-controller) a new
value may only drop dirs. DescribeLogDirs v5 tells each dir's state (`is_cordoned`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.answers import AdminError, Answers
from kafka_shell.base.errors import NotSupported

from kafka_shell.admin import configs, features, log_dirs

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

KEY = "cordoned.log.dirs"
ALL = "*"
LOG_DIRS_VERSION = 5          # DescribeLogDirs tells is_cordoned from v5
METADATA_LEVEL = 30           # metadata.version 4.3-IV0 (MetadataVersion.IBP_4_3_IV0)


def support(conn: ConnectionManager) -> str | None:
    """None when the cluster can cordon, else the line saying why not."""
    if not conn.supports(ApiKey.DESCRIBE_LOG_DIRS, LOG_DIRS_VERSION):
        return "this cluster cannot cordon log dirs (KIP-1066 needs Kafka 4.3 or later)"
    try:
        level = features.describe(conn).get(features.METADATA_VERSION)
    except NotSupported:
        return "this cluster cannot cordon log dirs (KIP-1066 needs KRaft, Kafka 4.3 or later)"
    if level is not None and level.finalized < METADATA_LEVEL:
        return (f"cordoning needs metadata.version 4.3-IV0 or later (the cluster runs "
                f"{features.level_name(features.METADATA_VERSION, level.finalized)}): "
                "upgrade it with upgrade-features --metadata 4.3")
    return None


def require(conn: ConnectionManager) -> None:
    why = support(conn)
    if why is not None:
        raise NotSupported(why[0].upper() + why[1:] + ".")


@dataclass(frozen=True)
class BrokerDirs:
    """A broker's log dirs and which of them are cordoned, as it describes them now."""
    broker: int
    dirs: tuple[str, ...]
    cordoned: tuple[str, ...]

    @property
    def all_cordoned(self) -> bool:
        """Nothing new lands on the broker (every dir cordoned)."""
        return bool(self.dirs) and set(self.cordoned) == set(self.dirs)


def state(conn: ConnectionManager, brokers: list[int]) -> tuple[dict[int, BrokerDirs], dict[int, AdminError]]:
    """Per broker its dirs and the cordoned ones (DescribeLogDirs, no partitions), and the
    brokers that did not answer."""
    found = log_dirs.describe(conn, brokers, {})
    out: dict[int, BrokerDirs] = {}
    for d in found.dirs:
        got = out.get(d.broker, BrokerDirs(d.broker, (), ()))
        out[d.broker] = BrokerDirs(d.broker, (*got.dirs, d.path), (*got.cordoned, d.path) if d.cordoned else got.cordoned)
    return out, dict(found.errors)


def value(conn: ConnectionManager, broker: int) -> list[str]:
    """The broker's cordoned.log.dirs now, as a list (["*"] for all)."""
    text = configs.value_of(conn, configs.BROKERS, str(broker), KEY) or ""
    return [d.strip() for d in text.split(",") if d.strip()]


def new_value(current: list[str], dirs: list[str], every: list[str], cordon: bool) -> list[str] | None:
    """The cordoned.log.dirs that cordons (or uncordons) `dirs` (empty: the whole broker) of a
    broker whose log dirs are `every` and whose value is `current`; None when nothing changes,
    [] when the config goes. The whole broker is `*`, so that it stays so whatever its dirs."""
    now = set(every) if ALL in current else set(current)
    asked = set(dirs) if dirs else set(every)
    after = now | asked if cordon else now - asked
    if after == now and (not cordon or dirs or ALL in current):
        return None
    if not after:
        return []
    return [ALL] if cordon and not dirs else sorted(after)


def set_value(conn: ConnectionManager, broker: int, dirs: list[str], dry_run: bool) -> Answers[str, None]:
    """Set (or with [] remove) the broker's cordoned.log.dirs, at the broker (which checks the
    dirs); a refusal is the error it fails with."""
    set_, delete = ({KEY: ",".join(dirs)}, []) if dirs else ({}, [KEY])
    return configs.alter_or_fail(conn, configs.BROKERS, [str(broker)], set_, delete, dry_run)
