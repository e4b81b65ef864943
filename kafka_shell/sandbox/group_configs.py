"""Group configs (KIP-848/932): DescribeConfigs and IncrementalAlterConfigs on resource type
GROUP, with Kafka 4.4's keys, defaults and checks.

The keys, their types, broker synonyms and documentation are what a real Kafka 4.4 broker
describes for a group (kafka_shell/protocol/definitions/group-configs-4.4.json, read from one with
DescribeConfigs); a key's default is its broker synonym's value (group.consumer.session.timeout.ms
for consumer.session.timeout.ms), and timeouts and intervals must lie within the broker's
group.<type>.min/max.* bounds, as Kafka's GroupConfig checks. Overrides live per group id in
`ClusterState.group_configs` (a group need not exist to be configured, as in Kafka).
"""

from __future__ import annotations

import re

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.definitions import group_configs
from kafka_shell.sandbox import configs, replay
from kafka_shell.sandbox.model import ClusterState
from kafka_shell.sandbox.records import GROUP_RESOURCE

GROUP_CONFIG_SOURCE, DEFAULT_SOURCE = 8, 5
BOOLEAN, STRING, INT, LIST = 1, 2, 3, 7
# Keys bounded by broker configs: key -> (min key, max key).
BOUNDS = {
    f"{kind}.{what}": (f"group.{kind}.min.{what}", f"group.{kind}.max.{what}")
    for kind in ("consumer", "share", "streams") for what in ("session.timeout.ms", "heartbeat.interval.ms")
} | {
    f"{kind}.assignment.interval.ms": (f"group.{kind}.min.assignment.interval.ms", f"group.{kind}.max.assignment.interval.ms")
    for kind in ("consumer", "share", "streams")
} | {
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"),
    "share.delivery.count.limit": ("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    "share.partition.max.record.locks": ("group.share.min.partition.max.record.locks",
                                         "group.share.max.partition.max.record.locks"),
}
CHOICES = {"share.isolation.level": ("read_committed", "read_uncommitted")}
AUTO_OFFSET_RESET = re.compile(r"(?i)earliest|latest|by_duration:P(\d+D)?(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?")


class GroupConfigError(Exception):
    code = ErrorCode.invalid_config


def definitions() -> dict[str, dict]:
    """Kafka 4.4's group config keys, in the order Kafka describes them."""
    return group_configs()


def overrides(cluster: ClusterState, group_id: str) -> dict[str, str]:
    table = cluster.group_configs
    return table.get(group_id, {})


def configured(cluster: ClusterState) -> list[str]:
    """The groups with configs of their own (Kafka's GroupConfigManager.groupIds)."""
    return list(cluster.group_configs)


def default(cluster: ClusterState, key: str) -> str:
    d = definitions()[key]
    value = configs.broker_value(cluster, None, d["synonym"]) if d["synonym"] != key else None
    if d["synonym"] == "group.streams.assignors" and value:
        value = value.split(",")[0].strip()   # the first assignor is the group's default
    return value if value is not None else d["default"]


def value(cluster: ClusterState, group_id: str, key: str) -> int:
    """An int group config of the group: its override, else the broker's value."""
    return int(overrides(cluster, group_id).get(key) or default(cluster, key))


def describe(cluster: ClusterState, group_id: str) -> list[dict]:
    mine = overrides(cluster, group_id)
    out = []
    for key, d in definitions().items():
        base = {"name": d["synonym"], "value": default(cluster, key), "source": DEFAULT_SOURCE}
        entry = {"name": key, "read_only": False, "is_sensitive": False, "config_type": d["type"],
                 "documentation": d["doc"]}
        if key in mine:
            out.append({**entry, "value": mine[key], "config_source": GROUP_CONFIG_SOURCE,
                        "synonyms": [{"name": key, "value": mine[key], "source": GROUP_CONFIG_SOURCE}, base]})
        else:
            out.append({**entry, "value": base["value"], "config_source": DEFAULT_SOURCE, "synonyms": [base]})
    return out


def check(cluster: ClusterState, key: str, value: str) -> None:
    """GroupConfig's validation of one value; GroupConfigError with Kafka's message."""
    d = definitions().get(key)
    if d is None:
        raise GroupConfigError(f"Unknown group config name: {key}")
    if d["type"] == INT:
        try:
            number = int(value.strip())
        except ValueError:
            raise GroupConfigError(f"Invalid value {value} for configuration {key}: Not a number of type INT") from None
        if key in BOUNDS:
            low, high = (int(configs.broker_value(cluster, None, k) or 0) for k in BOUNDS[key])
            if not low <= number <= high:
                raise GroupConfigError(f"{key} must be in the range {low} to {high} inclusive.")
    elif d["type"] == BOOLEAN and value.strip().lower() not in ("true", "false"):
        raise GroupConfigError(f"Invalid value {value} for configuration {key}: Expected value to be either true or false")
    elif key == "share.auto.offset.reset" and not AUTO_OFFSET_RESET.fullmatch(value.strip()):
        raise GroupConfigError(
            f"Invalid value {value} for configuration {key}: Invalid value `{value}` for configuration {key}. "
            "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
    elif key in CHOICES and value not in CHOICES[key]:
        raise GroupConfigError(f"Invalid value {value} for configuration {key}: String must be one of: "
                               + ", ".join(CHOICES[key]))
    elif key == "errors.deadletterqueue.topic.name" and value.startswith("__"):
        raise GroupConfigError("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")


def alter(cluster: ClusterState, group_id: str, changes: list[tuple[str, int, str | None]], validate_only: bool) -> None:
    """IncrementalAlterConfigs on a group: (key, operation, value) with SET 0, DELETE 1, APPEND 2,
    SUBTRACT 3; all are checked before any applies."""
    new = dict(overrides(cluster, group_id))
    for key, op, val in changes:
        d = definitions().get(key)
        if d is None:
            raise GroupConfigError(f"Unknown group config name: {key}")
        if op in (2, 3) and d["type"] != LIST:
            verb = "APPEND" if op == 2 else "SUBTRACT"
            raise GroupConfigError(f"Can't {verb} to key {key} because its type is not LIST.")
        if op == 1:
            new.pop(key, None)
            continue
        if op in (2, 3):
            items = [x for x in (new.get(key) or default(cluster, key)).split(",") if x]
            given = [x.strip() for x in (val or "").split(",") if x.strip()]
            items = items + [x for x in given if x not in items] if op == 2 else [x for x in items if x not in given]
            val = ",".join(items)
        check(cluster, key, val or "")
        new[key] = val or ""
    if not validate_only:
        replay.apply_all(cluster, configs.config_records(GROUP_RESOURCE, group_id, overrides(cluster, group_id), new))
