"""Cluster features, like kafka-features (KIP-584): describe-features, upgrade-features,
downgrade-features, disable-feature and version-mapping. Levels are read from the cluster when
the command runs; metadata.version is named by Kafka's metadata versions (4.1-IV1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.admin import features
from kafka_shell.base.answers import Answers
from kafka_shell.declarations import failure_lines
from kafka_shell.base.errors import UsageError, shown
from kafka_shell.base.limits import INT16_MAX
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

def feature_level(text: str) -> tuple[str, int]:
    """`name=level` (kafka-features' --feature)."""
    name, sep, level = text.partition("=")
    if not (sep and name.strip() and name.isprintable() and name.isascii() and level.strip().isascii()
            and level.strip().isdigit() and int(level) <= INT16_MAX):
        raise ValueError(f"name=level, like group.version=1 (a level from 0 to {INT16_MAX})")
    return name.strip(), int(level)


def _metadata(text: str) -> tuple[str, int]:
    """A metadata version or release the shell knows -> (the name as given, its level); else
    kafka-features' line listing the known ones."""
    known = features.metadata_version(text)
    if known is None:
        names = ", ".join(n for n, _, _ in features.metadata_versions())
        raise UsageError(f"Unknown metadata.version '{text}'. Supported metadata.version are: {names}")
    return known


METADATA = Option("--metadata", type=_metadata, metavar="VERSION",
                  help="The metadata.version to reach, as a release (4.1) or a metadata version (4.1-IV1).")
UNSAFE = Option("--unsafe", flag=True, help="Allow a downgrade that may lose metadata (kafka-features --unsafe).")
FEATURE = Option("--feature", type=feature_level, repeatable=True, metavar="NAME=LEVEL",
                 help="A feature and the level to reach (repeatable), e.g. group.version=1.")


def _updates(args: dict, upgrade_type: int) -> list[features.Update]:
    wanted = list(args["feature"] or [])
    if args.get("metadata"):
        if any(name == features.METADATA_VERSION for name, _ in wanted):
            raise UsageError("metadata.version is given twice: use --metadata or --feature metadata.version=N")
        wanted.insert(0, (features.METADATA_VERSION, args["metadata"][1]))
    if not wanted:
        raise UsageError("Give --metadata VERSION or --feature NAME=LEVEL (see describe-features)")
    names = [n for n, _ in wanted]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"Feature {twice[0]} is given twice: give each feature once")
    return [features.Update(name, level, upgrade_type) for name, level in wanted]


def _change(session: Session, updates: list[features.Update], dry_run: bool) -> Result | Proposal:
    """The change as a table (feature, finalized now -> wanted), read now; a dry run is the
    controller's validation of it, else the question naming it, then the cluster's answer."""
    now = features.describe(session.conn)
    unknown = [u.feature for u in updates if now.get(u.feature) is None]
    if unknown:
        raise UsageError(f"Unknown feature {shown(unknown[0])}: the cluster has "
                         f"{', '.join(f.name for f in now.features)} (see describe-features)")
    rows = []
    for u in updates:
        have = now.get(u.feature)
        rows.append([u.feature, features.level_name(u.feature, have.finalized) if have else None,
                     features.level_name(u.feature, u.level)])
    table = Table(["Feature", "FinalizedVersionLevel", "NewVersionLevel"], rows, name="changes")
    if dry_run:
        return _updated(table, features.update(session.conn, updates, True), True)
    change = ", ".join(f"{name} {old or 0} -> {new}" for name, old, new in rows)
    return Proposal(f"Change {change} (a metadata.version upgrade cannot be undone)?",
                    f"The feature change ({change}) needs confirmation",
                    lambda: _updated(table, features.update(session.conn, updates, False), False))


def _updated(table: Table, answers: Answers[str, features.Update], dry_run: bool) -> Result:
    """A line per feature changed (validated), as kafka-features says it; when the controller
    refused any, only the lines of those it refused."""
    if answers.errors:
        return Result.message(*failure_lines.feature_lines(answers.errors), exit_code=1)
    verb = "could be" if dry_run else "was"
    return Result(tables=[table], messages=[
        f"{u.feature} {verb} " + ("disabled" if u.level == 0 else
                                  f"{'upgraded' if u.upgrade_type == features.UPGRADE else 'downgraded'} to "
                                  f"{features.level_name(u.feature, u.level)}") + "."
        for u in answers.rows.values()])


@command("describe-features",
         help="Every feature's supported range and finalized level, with the epoch (kafka-features describe).",
         examples=("describe-features",), tables=("features",))
def describe_features(session: Session, args: dict) -> Result:
    found = features.describe(session.conn)
    epoch = found.epoch if found.epoch >= 0 else None
    rows = [[f.name, features.level_name(f.name, f.supported_min), features.level_name(f.name, f.supported_max),
             features.level_name(f.name, f.finalized), f.finalized, epoch] for f in found.features]
    # Kafka's own lines in the table format; json and csv get the table.
    text = "\n".join(f"Feature: {r[0]}\tSupportedMinVersion: {r[1]}\tSupportedMaxVersion: {r[2]}\t"
                     f"FinalizedVersionLevel: {r[3]}\tEpoch: {'-' if epoch is None else epoch}" for r in rows)
    return Result(tables=[Table(["Feature", "SupportedMinVersion", "SupportedMaxVersion", "FinalizedVersionLevel",
                                "FinalizedLevel", "Epoch"], rows, name="features")], text=text)


@command("upgrade-features", METADATA, FEATURE, mutates=True, confirm=Confirm(proposed=True),
         help="Upgrade metadata.version or other features (kafka-features upgrade); metadata.version never goes "
              "back. --dry-run asks the controller to validate only.",
         examples=("upgrade-features --metadata 4.1 --dry-run", "upgrade-features --feature group.version=1 --yes"), tables=("changes",))
def upgrade_features(session: Session, args: dict) -> Result | Proposal:
    return _change(session, _updates(args, features.UPGRADE), args["dry_run"])


@command("downgrade-features", METADATA, FEATURE, UNSAFE,
         mutates=True, confirm=Confirm(proposed=True),
         help="Downgrade features (kafka-features downgrade): safe downgrades only unless --unsafe.",
         examples=("downgrade-features --feature group.version=0 --dry-run",), tables=("changes",))
def downgrade_features(session: Session, args: dict) -> Result | Proposal:
    return _change(session, _updates(args, _downgrade(args)), args["dry_run"])


def _downgrade(args: dict) -> int:
    return features.UNSAFE_DOWNGRADE if args["unsafe"] else features.SAFE_DOWNGRADE


def _name(text: str) -> str:
    text = text.strip()
    if not text or "=" in text or not text.isprintable() or not text.isascii():
        raise ValueError("a feature name, like group.version")
    return text


@command("disable-feature",
         Option("--feature", type=_name, repeatable=True, required=True, metavar="NAME",
                help="A feature to disable (level 0; repeatable)."),
         UNSAFE, mutates=True, confirm=Confirm(proposed=True),
         help="Disable features: finalize them at level 0 (kafka-features disable).",
         examples=("disable-feature --feature streams.version --dry-run",), tables=("changes",))
def disable_feature(session: Session, args: dict) -> Result | Proposal:
    return _change(session, _updates({"feature": [(n, 0) for n in args["feature"]]}, _downgrade(args)), args["dry_run"])


@command("version-mapping",
         Option("--release-version", type=_metadata, metavar="VERSION",
                help=f"A release (4.1) or metadata version (4.1-IV1); default {features.latest_production()}."),
         help="The feature levels a release brings, as kafka-features version-mapping prints them (no cluster needed).",
         examples=("version-mapping", "version-mapping --release-version 4.1"), tables=("features",))
def version_mapping(session: Session, args: dict) -> Result:
    rows = [[name, level, mv] for name, level, mv in features.version_mapping(args["release_version"])]
    text = "\n".join(f"{name}={level}" + (f" ({mv})" if mv else "") for name, level, mv in rows)
    return Result(tables=[Table(["Feature", "Level", "MetadataVersion"], rows, name="features")], text=text)
