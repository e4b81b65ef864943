"""Configs across the cluster (issue 33 item 5, as rpk's cluster config export/import): every
entity's dynamic configs read at once (the cluster-wide broker defaults, each broker's own,
each topic's overrides, each group's configs, the client quotas), as a Snapshot (written as one
JSON document and read back in kafka_shell/declarations/config_files.py); the changes that would
make the cluster match such a document; and the drift among brokers of the configs in effect.

Sensitive values (DescribeConfigs marks them: passwords, keys) are never read in clear, so
never written: the document lists their keys instead, and a plan never deletes or changes them
unless the document gives a value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_shell.connection.client_config import is_secret
from kafka_shell.protocol.codes import ConfigSource
from kafka_shell.base.answers import CONTROLLER, AdminError, Target
from kafka_shell.base.errors import KafkaCallError, NotSupported

from kafka_shell.admin import configs, groups, quotas

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

# The document's sections of named entities, and the entity type each is altered as.
BROKER_DEFAULTS, BROKERS, TOPICS, GROUPS, QUOTAS = "broker_defaults", "brokers", "topics", "groups", "client_quotas"
SECTIONS = (BROKER_DEFAULTS, BROKERS, TOPICS, GROUPS, QUOTAS)
KINDS = {BROKER_DEFAULTS: configs.BROKERS, BROKERS: configs.BROKERS, TOPICS: configs.TOPICS, GROUPS: configs.GROUPS}
# The source of each section's dynamic configs (what DescribeConfigs calls an override there).
_SOURCE = {BROKER_DEFAULTS: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.name,
           BROKERS: ConfigSource.DYNAMIC_BROKER_CONFIG.name, TOPICS: ConfigSource.DYNAMIC_TOPIC_CONFIG.name,
           GROUPS: ConfigSource.GROUP_CONFIG.name}
Configs = dict[str, str]
QuotaEntity = tuple[tuple[str, "str | None"], ...]   # (type, name; None for the default), in quotas.PART_ORDER


@dataclass
class Snapshot:
    """The dynamic configs of every entity of a cluster (or of a document), by section: entity
    name -> key -> value ("" names the broker defaults' one entity); the keys of sensitive
    values, which are never read; the client quotas by entity."""
    configs: dict[str, dict[str, Configs]] = field(default_factory=lambda: {s: {} for s in SECTIONS if s != QUOTAS})
    sensitive: dict[str, dict[str, list[str]]] = field(default_factory=lambda: {s: {} for s in SECTIONS if s != QUOTAS})
    quotas: dict[QuotaEntity, dict[str, float | int]] = field(default_factory=dict)
    sections: tuple[str, ...] = SECTIONS        # those read (or given in the document)
    groups_unread: NotSupported | None = None   # why group configs were not read (the cluster lacks them)
    broker_errors: dict[int, AdminError] = field(default_factory=dict)   # the brokers that did not give theirs
    # The brokers that did not list their groups (before Kafka 4.1, the groups with configs are those listed).
    group_listing_errors: dict[int, AdminError] = field(default_factory=dict)

    @property
    def unread(self) -> set[str]:
        """The brokers (by id) whose configs could not be read."""
        return {str(b) for b in self.broker_errors}


def read(conn: ConnectionManager, sections: tuple[str, ...] = SECTIONS) -> Snapshot:
    """Every entity's dynamic configs now, of `sections`: brokers at each broker, topics and
    groups in one request each, quotas in one; group configs on a cluster without them (before
    Kafka 4.0) are left out, with why (`groups_unread`)."""
    snap = Snapshot(sections=sections)
    meta = conn.read(None if TOPICS in sections else [])
    names = {BROKER_DEFAULTS: [""], BROKERS: [str(b) for b in sorted(meta.brokers)],
             TOPICS: sorted(t for t, info in meta.topics.items() if not info.internal)}
    if GROUPS in sections:
        try:
            configs.require_group_configs(conn)
            names[GROUPS], snap.group_listing_errors = _configured_groups(conn)
        except NotSupported as exc:
            snap.groups_unread = exc
    for section, entities in names.items():
        if section in sections and section != BROKERS:
            for name, entries in configs.describe(conn, KINDS[section], entities).items():
                _keep(snap, section, name, entries)
    if BROKERS in sections:   # each broker says its own, all at once; one that does not answer is named
        read = configs.each_broker(conn, [int(b) for b in names[BROKERS]])
        for broker, entries in read.rows.items():
            _keep(snap, BROKERS, str(broker), entries)
        snap.broker_errors = dict(read.errors)
    if QUOTAS in sections:
        for q in quotas.describe(conn, []):
            snap.quotas.setdefault(q.entity, {})[q.key] = q.value
    return snap


def _configured_groups(conn: ConnectionManager) -> tuple[list[str], dict[int, AdminError]]:
    """The groups with configs of their own (Kafka 4.1+ lists them, those of groups to come
    too); before, every group the brokers list, and the brokers that did not list theirs."""
    configured = configs.configured(conn, configs.GROUPS)
    if configured is not None:
        return configured, {}
    listed = groups.list_groups(conn)
    return [g.group_id for g in listed.groups], dict(listed.errors)


def _keep(snap: Snapshot, section: str, name: str, entries: list[configs.ConfigEntry]) -> None:
    """An entity's own dynamic configs (every entity read is kept, those without any too)."""
    own = [e for e in entries if e.source == _SOURCE[section]]
    snap.configs[section][name] = {e.name: e.value for e in own if not _secret(e) and e.value is not None}
    hidden = sorted(e.name for e in own if _secret(e))
    if hidden:
        snap.sensitive[section][name] = hidden


def _secret(e: configs.ConfigEntry) -> bool:
    return e.sensitive or is_secret(e.name)


def entity_label(entity: QuotaEntity) -> str:
    return ", ".join(f"{t}={n if n is not None else '<default>'}" for t, n in entity)


# -- the changes that make the cluster match a document --------------------------------------------


@dataclass(frozen=True)
class Change:
    section: str
    entity: str            # broker id, topic, group, "" for the broker defaults, a quota entity's label
    key: str
    value: str | float | int | None       # now (None: not set; a sensitive value is shown hidden)
    new: str | float | int | None         # None: deleted
    quota_entity: QuotaEntity = ()

    @property
    def action(self) -> str:
        return "delete" if self.new is None else "set"


def plan(wanted: Snapshot, now: Snapshot) -> tuple[list[Change], dict[tuple[str, str], int]]:
    """The changes that make each entity the document names match it (within the sections it
    has), and the entities that cannot take them (a broker or topic the cluster does not have):
    (section, name) -> how many configs the document gives it. Sensitive keys are set only when
    the document gives a value, never deleted."""
    changes: list[Change] = []
    absent: dict[tuple[str, str], int] = {}
    for section in (BROKER_DEFAULTS, BROKERS, TOPICS, GROUPS):
        if section not in wanted.sections:
            continue
        for name, values in sorted(wanted.configs[section].items()):
            if section == BROKERS and name in now.unread:
                continue   # its line says it did not answer
            if section in (BROKERS, TOPICS) and name not in now.configs[section]:
                absent[(section, name)] = len(values)
                continue
            current = now.configs[section].get(name, {})
            hidden = set(now.sensitive[section].get(name, [])) | set(wanted.sensitive[section].get(name, []))
            for key, value in sorted(values.items()):
                if key in hidden:
                    changes.append(Change(section, name, key, configs.HIDDEN if key in now.sensitive[section].get(name, [])
                                          else None, configs.HIDDEN))
                elif current.get(key) != value:
                    changes.append(Change(section, name, key, current.get(key), value))
            changes += [Change(section, name, key, value, None) for key, value in sorted(current.items())
                        if key not in values and key not in hidden]
    if QUOTAS in wanted.sections:
        for entity, limits in sorted(wanted.quotas.items(), key=lambda kv: entity_label(kv[0])):
            held = now.quotas.get(entity, {})
            label = entity_label(entity)
            changes += [Change(QUOTAS, label, k, held.get(k), v, entity) for k, v in sorted(limits.items())
                        if held.get(k) != v]
            changes += [Change(QUOTAS, label, k, v, None, entity) for k, v in sorted(held.items()) if k not in limits]
    return changes, absent


def describe_entity(section: str, name: str) -> str:
    """How a line names an entity of a section."""
    if section == QUOTAS:
        return f"the client quotas of {name}"
    return configs.label(KINDS[section], name)


def apply(conn: ConnectionManager, changes: list[Change], wanted: Snapshot,
          validate_only: bool) -> dict[tuple[str, str], AdminError]:
    """Apply (or with `validate_only` have the cluster validate) the changes, one request per
    entity: (section, name) -> an AdminError for each entity refused (its code), or whose request
    failed as a whole (no code; the failure's line as its message). Sensitive values come from
    the document only (a hidden one is never sent back)."""
    by_entity: dict[tuple[str, str], list[Change]] = {}
    for c in changes:
        by_entity.setdefault((c.section, c.entity), []).append(c)
    refused: dict[tuple[str, str], AdminError] = {}
    for (section, name), group in by_entity.items():
        try:
            if section == QUOTAS:
                error = quotas.refusal(conn, list(group[0].quota_entity), [(c.key, _number(c.new)) for c in group],
                                       validate_only)
            else:
                set_ = {c.key: wanted.configs[section][name][c.key] for c in group if c.new is not None}
                delete = [c.key for c in group if c.new is None]
                error = configs.alter(conn, KINDS[section], [name], set_, delete, validate_only).errors.get(name)
        except KafkaCallError as exc:   # the request failed (not answered...): the other entities are still tried
            error = AdminError(None, Target(CONTROLLER), str(exc))
        if error is not None:
            refused[(section, name)] = error
    return refused


def _number(value: str | float | int | None) -> float | None:
    return None if value is None else float(value)


# -- drift among brokers ---------------------------------------------------------------------------

# What each broker has of its own by design: never drift.
IDENTITY_KEYS = frozenset({"broker.id", "node.id", "broker.rack", "listeners", "advertised.listeners", "log.dir",
                           "log.dirs", "metadata.log.dir", "host.name"})


@dataclass(frozen=True)
class Drift:
    """A config whose value in effect differs among brokers: each broker's entry."""
    name: str
    entries: dict[int, configs.ConfigEntry]


def drift(described: dict[int, list[configs.ConfigEntry]], identity: bool = False) -> list[Drift]:
    """The configs whose value (a sensitive one: whose source) differs among the brokers, or
    that some of them lack; the brokers' identity keys only with `identity`."""
    by_name: dict[str, dict[int, configs.ConfigEntry]] = {}
    for broker, entries in described.items():
        for e in entries:
            by_name.setdefault(e.name, {})[broker] = e
    out = []
    for name, of_brokers in sorted(by_name.items()):
        if name in IDENTITY_KEYS and not identity:
            continue
        seen = {(e.source if e.sensitive else e.value) for e in of_brokers.values()}
        if len(seen) > 1 or len(of_brokers) < len(described):
            out.append(Drift(name, dict(sorted(of_brokers.items()))))
    return out
