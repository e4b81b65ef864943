"""One Kafka release's definitions (kafka-X.Y.json): ApiVersions per listener kind, features,
broker and topic configs; and config values checked as Kafka's ConfigDef checks them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from kafka_shell.protocol.definitions import BROKER, CONTROLLER, RELEASES, ZK_BROKER, check_release, read_json

__all__ = ["BROKER", "CONTROLLER", "ZK_BROKER", "Validator", "ConfigDef", "Features", "Release", "release",
           "check_value", "split_list"]


@dataclass(frozen=True)
class Validator:
    """A config's validator: Range bounds, ValidString / ValidList choices, or only Kafka's own
    description of it (`text`) for the kinds the shell does not check."""
    kind: str
    text: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    empty_allowed: bool = True


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: str                   # boolean, string, int, short, long, double, list, class, password
    default: str | None         # as Kafka prints it (ConfigDef.convertToString); None: no default
    doc: str | None = None
    validator: Validator | None = None
    mode: str = "read-only"     # brokers: read-only, per-broker or cluster-wide (DynamicBrokerConfig)
    synonyms: tuple[str, ...] = ()  # brokers: the keys DescribeConfigs reads for it, first wins
    synonym: str | None = None  # topics: the broker key that gives its default
    internal: bool = False      # Kafka's internal configs: settable, never described
    dynamic_only: bool = False  # brokers: a dynamic-only key (replication throttles), described once set

    @property
    def sensitive(self) -> bool:
        return self.type == "password"

    @property
    def read_only(self) -> bool:
        return self.mode == "read-only"

    @property
    def choices(self) -> tuple[str, ...]:
        return self.validator.choices if self.validator else ()


@dataclass(frozen=True)
class Features:
    supported: dict[str, tuple[int, int]]   # feature -> (lowest, highest) level
    finalized: dict[str, int]               # feature -> level at start (level-0 ones left out)
    v3_hides_min_zero: bool                 # ApiVersions v3 answers leave out features whose lowest level is 0


@dataclass(frozen=True)
class Release:
    name: str                                   # "4.4"
    version: str                                # "4.4.0", the release the data comes from
    apis: dict[str, dict[int, range]]           # listener kind -> api key -> versions ApiVersions lists
    valid: dict[int, range]                     # api key -> versions Kafka parses
    features: dict[str, Features]               # listener kind -> features
    broker_configs: dict[str, ConfigDef]
    topic_configs: dict[str, ConfigDef]
    dynamic_security_configs: frozenset[str]    # only per listener (listener.name.L. prefix)
    api_names: dict[int, str]

    @property
    def has_zookeeper(self) -> bool:
        return ZK_BROKER in self.apis

    @property
    def major(self) -> int:
        return int(self.name.split(".")[0])


@cache
def raw(name: str) -> dict:
    """The generated JSON of one release."""
    return read_json(f"kafka-{check_release(name)}.json")


@cache
def release(name: str) -> Release:
    data = raw(name)
    return Release(
        name=name, version=data["release"],
        apis={kind: {int(k): range(lo, hi + 1) for k, (lo, hi) in ranges.items()} for kind, ranges in data["apis"].items()},
        valid={int(k): range(lo, hi + 1) for k, (lo, hi) in data["valid"].items()},
        features={kind: Features({n: (lo, hi) for n, lo, hi in f["supported"]}, {n: level for n, level in f["finalized"]},
                                 f["v3_hides_min_zero"]) for kind, f in data["features"].items()},
        broker_configs={c["name"]: _config(c) for c in data["broker_configs"]}
        | {c["name"]: _config(c, dynamic_only=True) for c in data["dynamic_only_broker_configs"]},
        topic_configs={c["name"]: _config(c) for c in data["topic_configs"]},
        dynamic_security_configs=frozenset(data["dynamic_security_configs"]),
        api_names={int(k): v for k, v in data["api_names"].items()},
    )


@cache
def configs_of(entity: str) -> dict[str, ConfigDef]:
    """Every topic ("topics") or broker ("brokers") config key some release defines, but the
    internal ones (Kafka leaves them out of DescribeConfigs), with the newest release's
    definition of each."""
    out: dict[str, ConfigDef] = {}
    for name in RELEASES:  # newest first: its definition wins
        r = release(name)
        for key, d in (r.topic_configs if entity == "topics" else r.broker_configs).items():
            if not d.internal:
                out.setdefault(key, d)
    return out


def _config(c: dict, dynamic_only: bool = False) -> ConfigDef:
    v = c.get("validator")
    validator = None if v is None else Validator(v["kind"], v["text"], v.get("min"), v.get("max"),
                                                 tuple(v.get("choices") or ()), v.get("empty_allowed", True))
    return ConfigDef(name=c["name"], type=c["type"], default=c["default"], doc=c.get("doc"), validator=validator,
                     mode=c.get("mode", "read-only"), synonyms=tuple(c.get("synonyms") or (c["name"],)),
                     synonym=c.get("synonym"), internal=c.get("internal", False), dynamic_only=dynamic_only)


# -- config values, as Kafka's ConfigDef parses and validates them ------------------------------------

_REPLICA = re.compile(r"[0-9]+:[0-9]+")
_INT_RANGE = {"int": (-2**31, 2**31 - 1), "short": (-2**15, 2**15 - 1), "long": (-2**63, 2**63 - 1)}


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def check_value(d: ConfigDef, value: str) -> str | None:
    """Kafka's message for a value its ConfigDef would refuse (parse, then validator), or None.
    The value in the message is the parsed one, as Kafka prints it (2 -> 2.0 for a double)."""
    text = value.strip()
    number: float
    if d.type == "boolean":
        if text.lower() not in ("true", "false"):
            return f"Invalid value {value} for configuration {d.name}: Expected value to be either true or false"
        return None
    if d.type in _INT_RANGE:
        try:
            number = int(text)
        except ValueError:
            number = _INT_RANGE[d.type][1] + 1
        low, high = _INT_RANGE[d.type]
        if not low <= number <= high:
            return f"Invalid value {value} for configuration {d.name}: Not a number of type {d.type.upper()}"
        shown = str(number)
    elif d.type == "double":
        try:
            number = float(text)
        except ValueError:
            return f"Invalid value {value} for configuration {d.name}: Not a number of type DOUBLE"
        shown = repr(number)
    else:
        v = d.validator
        if v is not None and v.kind == "ThrottledReplicaListValidator":
            items = split_list(text)
            if items != ["*"] and not all(_REPLICA.fullmatch(i) for i in items):
                return (f"Invalid value [{', '.join(items)}] for configuration {d.name}: {d.name} must be the literal '*' "
                        "or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
            return None
        if v is None or not v.choices:
            return None
        items = split_list(text) if d.type == "list" else [text]
        for item in items:
            allowed = item.lower() in (c.lower() for c in v.choices) if v.kind == "CaseInsensitiveValidString" \
                else item in v.choices
            if not allowed:
                how = " (case insensitive)" if v.kind == "CaseInsensitiveValidString" else ""
                return f"Invalid value {item} for configuration {d.name}: String must be one of{how}: {', '.join(v.choices)}"
        return None
    v = d.validator
    if v is not None and v.kind == "Range":
        if v.min is not None and number < v.min:
            return f"Invalid value {shown} for configuration {d.name}: Value must be at least {_num(v.min)}"
        if v.max is not None and number > v.max:
            return f"Invalid value {shown} for configuration {d.name}: Value must be no more than {_num(v.max)}"
    return None


def _num(x: float) -> str:
    """A bound as Java prints the Number it was given (1 stays 1, 1.0 stays 1.0)."""
    return str(x)
