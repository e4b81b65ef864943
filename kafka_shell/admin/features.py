"""Cluster features (KIP-584; `kafka-features`): what every node supports and what the cluster
finalized, from a fresh ApiVersions (v3+), and changes with UpdateFeatures (upgrade, safe or
unsafe downgrade, disable; `validate_only` for a dry run). metadata.version levels are named
by Kafka's metadata versions (`4.1-IV1`), from Kafka 4.4's own table (definitions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_shell import __version__
from kafka_shell.protocol import definitions
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.answers import CONTROLLER, AdminError, Answers, Target
from kafka_shell.base.errors import NotSupported

from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
FEATURES_VERSION = 3        # ApiVersions tells features from v3 (KIP-584)
VALIDATE_ONLY_VERSION = 1   # UpdateFeatures v1: upgrade types and validate_only (KIP-778)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3   # UpdateFeatures' upgrade types


@dataclass(frozen=True)
class Feature:
    name: str
    supported_min: int
    supported_max: int
    finalized: int          # 0 when the cluster finalized no level (Kafka leaves those out)


@dataclass(frozen=True)
class Features:
    features: tuple[Feature, ...]   # by name
    epoch: int                      # the finalized features' epoch; -1 unknown

    def get(self, name: str) -> Feature | None:
        return next((f for f in self.features if f.name == name), None)


def describe(conn: ConnectionManager) -> Features:
    """The features a node reports now (a broker, or a controller with --bootstrap-controller),
    as Kafka's AdminClient describeFeatures asks for them."""
    version = conn.version(ApiKey.API_VERSIONS)
    if version is None or version < FEATURES_VERSION:
        raise NotSupported("Describing features needs ApiVersions v3 (KIP-584, Kafka 2.7+), which this cluster lacks.")
    conn.debug("ApiVersions request (features)")
    answer = conn.any_broker_request(ApiKey.API_VERSIONS, {"client_software_name": "kafka-shell",
                                                           "client_software_version": __version__})
    if answer.error_code:
        raise response_error(ApiKey.API_VERSIONS, answer.error_code)
    finalized = {f.name: f.max_version_level for f in answer.finalized_features}
    features = tuple(sorted((Feature(f.name, f.min_version, f.max_version, finalized.get(f.name, 0))
                             for f in answer.supported_features), key=lambda f: f.name))
    if not features:
        raise NotSupported("This cluster reports no features (KIP-584): a ZooKeeper-mode cluster keeps them in "
                           "ZooKeeper, which kafka-shell does not read.")
    return Features(features, answer.finalized_features_epoch)


# -- metadata versions (Kafka's MetadataVersion) ---------------------------------------------


def metadata_versions() -> list[tuple[str, int, dict[str, int]]]:
    """(name, level, levels of the other features) of every metadata version, oldest first."""
    return [(n, level, dict(others)) for n, level, others in definitions.feature_levels()["metadata_versions"]]


def latest_production() -> str:
    return str(definitions.feature_levels()["latest_production"])


def metadata_version(text: str) -> tuple[str, int] | None:
    """A metadata version as kafka-features takes it (`4.1-IV1`, or a release `4.1`: its last
    one) -> (the name as given, its level); None when no release the shell knows has it."""
    matches = [(n, level) for n, level, _ in metadata_versions() if n == text or n.split("-IV")[0] == text]
    return (text, matches[-1][1]) if matches else None


def level_name(feature: str, level: int) -> str:
    """A level as kafka-features prints it: metadata.version by its name (4.4-IV2), others as numbers."""
    if feature == METADATA_VERSION:
        name = next((n for n, lv, _ in metadata_versions() if lv == level), None)
        if name is not None:
            return name
    return str(level)


def version_mapping(release: tuple[str, int] | None) -> list[tuple[str, int, str | None]]:
    """What `kafka-features version-mapping` prints for a release (metadata_version's answer;
    None: the latest production one): (feature, level, the metadata version's name for
    metadata.version)."""
    if release is None:
        release = metadata_version(latest_production())
        assert release is not None   # the latest production version is one the shell knows
    name, level = release
    others = next(o for n, lv, o in metadata_versions() if lv == level)
    return [(METADATA_VERSION, level, name), *((f, lv, None) for f, lv in others.items())]


# -- changes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Update:
    feature: str
    level: int          # 0 disables it
    upgrade_type: int   # UPGRADE, SAFE_DOWNGRADE or UNSAFE_DOWNGRADE


def update(conn: ConnectionManager, updates: list[Update], dry_run: bool) -> Answers[str, Update]:
    """UpdateFeatures (on the controller): the updates made (in a dry run, validated) by
    feature, an AdminError for each feature refused; a request refused as a whole is the error
    the call fails with. A dry run is the controller's own validation (validate_only)."""
    version = conn.version(ApiKey.UPDATE_FEATURES)
    if version is None:
        raise NotSupported("Changing features needs the UpdateFeatures API (KIP-584), which this cluster lacks.")
    if dry_run and version < VALIDATE_ONLY_VERSION:
        raise NotSupported("--dry-run needs UpdateFeatures v1 (validate_only), which this cluster lacks.")
    body = {"timeout": int(conn.timeout_s * 1000), "validate_only": dry_run,
            "feature_updates": [{"feature": u.feature, "max_version_level": u.level, "upgrade_type": u.upgrade_type,
                                 "allow_downgrade": u.upgrade_type != UPGRADE} for u in updates]}
    conn.debug(f"UpdateFeatures request: {len(updates)} feature(s)")
    answer = conn.controller_request(ApiKey.UPDATE_FEATURES, body, mutation=True)
    if answer.error_code:
        raise response_error(ApiKey.UPDATE_FEATURES, answer.error_code, answer.error_message, entity="the features")
    refused = {r.feature: AdminError(r.error_code, Target(CONTROLLER), r.error_message or "")
               for r in getattr(answer, "results", ()) if r.error_code}
    return Answers({u.feature: u for u in updates if u.feature not in refused}, refused)
