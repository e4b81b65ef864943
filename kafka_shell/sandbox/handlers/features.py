"""Feature flags (KIP-584): ApiVersions reports them, UpdateFeatures v0-v2 changes them.

The features and levels are those of the Kafka release the sandbox follows, as its KRaft nodes
report them (kafka_shell.protocol.definitions): the levels every node supports, and the levels a new
cluster starts with (Kafka 4.4: metadata.version 33, ELR, group, transaction, share and streams
versions; 3.9: metadata.version 21; level-0 features are left out of the finalized list).
zk-mode brokers report none. The levels change by FeatureLevelRecords (Kafka's
FeatureControlManager; a new cluster's are its bootstrap records, `bootstrap_records`).
UpdateFeatures is a controller API (brokers forward it in
KRaft mode), validated as Kafka's FeatureControlManager does: unknown upgrade types, levels
outside the supported range, downgrades without a downgrade type and "downgrades" to a higher
level are INVALID_UPDATE_VERSION; metadata.version is never downgraded (Kafka refuses any
downgrade that might lose metadata, and unsafe ones altogether). The first failing update fails
the whole request, and nothing changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import definitions
from kafka_shell.protocol.definitions import releases
from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox import replay
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.records import FeatureLevelRecord

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"   # the quorum's (sandbox.quorum): 1 makes its voters changeable
FAILED = "The update failed for all features since the following feature had an error: "
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def _features(cluster) -> releases.Features:
    return releases.release(cluster.kafka_version).features[definitions.BROKER]


def supported(cluster) -> dict[str, tuple[int, int]]:
    """feature -> (lowest, highest) level every sandbox node supports."""
    return _features(cluster).supported


def finalized(cluster) -> dict[str, int]:
    return cluster.features


def bootstrap_records(cluster, dynamic_quorum: bool) -> list[FeatureLevelRecord]:
    """A new cluster's finalized levels: the release's (kraft.version 1 for a dynamic quorum)."""
    levels = dict(_features(cluster).finalized)
    if dynamic_quorum:
        levels[KRAFT_VERSION] = 1
    return [FeatureLevelRecord(name, level) for name, level in levels.items() if level > 0]


def replay_level(cluster, record: FeatureLevelRecord) -> None:
    if record.feature_level == 0:
        cluster.features.pop(record.name, None)
    else:
        cluster.features[record.name] = record.feature_level


def snapshot(cluster) -> list[FeatureLevelRecord]:
    return [FeatureLevelRecord(name, level) for name, level in cluster.features.items()]


REPLAY = {FeatureLevelRecord: replay_level}


def api_versions_features(cluster, version: int) -> dict:
    """The feature fields of an ApiVersions answer (v3+). Kafka 4.x leaves features whose lowest
    level is 0 out of v3 answers (older clients cannot parse them)."""
    hide = version < 4 and _features(cluster).v3_hides_min_zero
    return {
        "supported_features": [{"name": n, "min_version": lo, "max_version": hi}
                               for n, (lo, hi) in supported(cluster).items() if not (hide and lo == 0)],
        "finalized_features_epoch": cluster.generation,
        "finalized_features": [{"name": n, "min_version_level": level, "max_version_level": level}
                               for n, level in finalized(cluster).items() if level > 0],
    }


def _upgrade_type(update, version: int) -> int:
    if version == 0:
        return SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE
    return update.upgrade_type


def _check(cluster, name: str, level: int, kind: int) -> str | None:
    """Why this update is refused (Kafka's messages), or None."""
    def invalid(reason: str) -> str:
        return f"Invalid update version {level} for feature {name}. {reason}"
    if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return invalid("The controller does not support the given upgrade type.")
    current = finalized(cluster).get(name, 0)
    if level < 0:
        return invalid("A feature version cannot be less than 0.")
    low, high = supported(cluster).get(name, (0, 0))
    if name not in supported(cluster) and level > 0:
        return invalid(f"Local controller {cluster.controller_id} does not support this feature.")
    if not low <= level <= high:
        return invalid(f"Local controller {cluster.controller_id} only supports versions {low}-{high}")
    if level < current and kind == UPGRADE:
        return invalid("Can't downgrade the version of this feature without setting the upgrade "
                       "type to either safe or unsafe downgrade.")
    if level > current and kind != UPGRADE:
        return invalid("Can't downgrade to a newer version.")
    if name == KRAFT_VERSION and level < current:
        # KafkaRaftClient: the quorum's version never goes back (its voters' records need it).
        return invalid("Can't downgrade the version of this feature.")
    if name == METADATA_VERSION and level < current:
        reason = ("Unsafe metadata downgrade is not supported in this version." if kind == UNSAFE_DOWNGRADE
                  else "Refusing to perform the requested downgrade because it might delete metadata information.")
        if cluster.kafka_version == "3.9":
            return f"Invalid metadata.version {level}. {reason}"
        return f"Unsupported metadata.version downgrade from {current} to {level}. {reason}"   # 4.x's wording
    return None


@api(ApiKey.UPDATE_FEATURES)
def update_features(ctx: RequestContext) -> dict:
    req = ctx.request
    names = [u.feature for u in req.feature_updates]
    error, message = ErrorCode.none, None
    if not ctx.permits(AclResourceType.CLUSTER):
        error = ErrorCode.cluster_authorization_failed
    elif not ctx.is_controller:
        error, message = ErrorCode.not_controller, "This is not the correct controller for this cluster."
    elif len(set(names)) != len(names):
        error, message = ErrorCode.invalid_request, "Duplicate feature in the request."
    else:
        for u in req.feature_updates:
            message = _check(ctx.cluster, u.feature, u.max_version_level, _upgrade_type(u, ctx.version))
            if message is not None:
                error = ErrorCode.invalid_update_version
                break
    if error == ErrorCode.none and not req.validate_only:
        replay.apply_all(ctx.cluster, [FeatureLevelRecord(u.feature, u.max_version_level) for u in req.feature_updates])
    # QuorumController.updateFeatures: per-feature results only on success and up to v1; the
    # first failing feature's message after FAILED.
    results = [{"feature": n, "error_code": 0, "error_message": "NONE"} for n in names] \
        if not error and ctx.version <= 1 else []
    if error == ErrorCode.invalid_update_version:
        message = FAILED + (message or "")
    return {"error_code": error, "error_message": message, "results": results}
