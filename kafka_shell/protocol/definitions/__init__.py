"""Apache Kafka's own definitions, per release, for the shell and the sandbox alike (neither owns
them): what each listener kind lists in ApiVersions, the feature levels, the broker and topic
config definitions (type, default, validator, documentation, dynamic update mode, synonyms)
(`releases`), and the message versions kio lacks with Kafka's request field defaults
(`messages`).

`kafka-X.Y.json`, `messages/KEY.json` and `request-defaults.json` are generated from Kafka's jars and
from real clusters of the releases pinned in .ci/kafka-versions by tools/kafka_definitions.py;
nothing here is written by hand. They are read lazily, once, and this package's own import
costs nothing (the shell's one-shot start-up imports it: hence os.path rather than pathlib).
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

HERE = os.path.dirname(os.path.realpath(__file__))

# The releases the sandbox can follow, newest first; the first is the default.
RELEASES = ("4.4", "3.9")
DEFAULT_RELEASE = RELEASES[0]
# The newest release with ZooKeeper mode (4.0 removed it).
ZK_RELEASE = "3.9"

# Listener kinds, as ApiVersions differs between them.
BROKER, CONTROLLER, ZK_BROKER = "broker", "controller", "zk_broker"


def read_json(name: str) -> Any:
    """One of the definitions' files, parsed."""
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return json.load(f)


def check_release(name: str) -> str:
    """`name` if the definitions cover it, else ValueError naming the ones they do."""
    if name not in RELEASES:
        raise ValueError(f"unknown Kafka version {name!r}: use {' or '.join(RELEASES)}")
    return name


@cache
def group_configs() -> dict[str, dict]:
    """Kafka 4.4's group config keys (KIP-848/932/1071), in the order Kafka describes them: name,
    type (DescribeConfigs' code), the broker key that gives its default (synonym), default, doc."""
    return {d["name"]: d for d in read_json("group-configs-4.4.json")}


def feature_levels() -> dict:
    """Kafka 4.4's metadata versions (name, level) and the level of every other feature each one
    brings (what `kafka-features version-mapping` prints), oldest first."""
    return read_json("feature-levels-4.4.json")
