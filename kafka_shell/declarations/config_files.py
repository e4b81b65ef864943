"""The configs file of export-configs and import-configs: a JSON document of a cluster's dynamic
configs (kafka_shell/admin/cluster_configs.py reads them, plans and applies the changes), written
from a Snapshot and read back into one. Each problem of a file is one line that names its place
and what is wrong (a UsageError: nothing is sent).
"""

from __future__ import annotations

import datetime
from typing import Any

from kafka_shell.admin import quotas
from kafka_shell.admin.cluster_configs import (BROKER_DEFAULTS, BROKERS, GROUPS, QUOTAS, SECTIONS, TOPICS, Configs,
                                               Snapshot, entity_label)
from kafka_shell.base.errors import UsageError, shown

FORMAT = "kafka-shell configs"
VERSION = 1

NOTE = ("Dynamic configs of the cluster written by kafka-shell export-configs: the cluster-wide broker defaults, "
        "each broker's own, each topic's overrides (internal topics left out), each group's configs and the client "
        "quotas. Sensitive values (passwords and keys: Kafka's DescribeConfigs marks them and never gives them) "
        "were left out: sensitive_left_out lists their keys, and import-configs leaves those keys as they are. "
        "import-configs makes each entity named here match it (keys it lacks are deleted); entities and sections "
        "not named are left alone.")


def document(snap: Snapshot, cluster_id: str | None) -> dict[str, Any]:
    """The JSON document of a snapshot (keys sorted when written: it diffs well)."""
    left_out: dict[str, Any] = {BROKER_DEFAULTS: snap.sensitive[BROKER_DEFAULTS].get("", [])}
    left_out.update({s: _sorted(snap.sensitive[s], s) for s in (BROKERS, TOPICS, GROUPS)})
    return {"format": FORMAT, "version": VERSION, "cluster_id": cluster_id,
            "exported": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "note": NOTE,
            BROKER_DEFAULTS: dict(sorted(snap.configs[BROKER_DEFAULTS].get("", {}).items())),
            BROKERS: _sorted(snap.configs[BROKERS], BROKERS),
            # Topics and groups without configs of their own are left out (thousands of topics).
            TOPICS: _sorted({n: v for n, v in snap.configs[TOPICS].items() if v}, TOPICS),
            GROUPS: _sorted({n: v for n, v in snap.configs[GROUPS].items() if v}, GROUPS),
            QUOTAS: [{"entity": {t: n for t, n in entity}, "quotas": values}
                     for entity, values in sorted(snap.quotas.items(), key=lambda kv: entity_label(kv[0]))],
            "sensitive_left_out": left_out}


def _sorted(entities: dict[str, Any], section: str) -> dict[str, Any]:
    """Entities by name (brokers by number), each one's keys sorted: the file diffs well."""
    order = sorted(entities, key=lambda n: (len(n), n) if section == BROKERS else (0, n))
    return {n: dict(sorted(entities[n].items())) if isinstance(entities[n], dict) else entities[n] for n in order}


def from_document(doc: object, path: str) -> Snapshot:
    """A snapshot of what a document says, checked: one UsageError line naming the place of
    the first thing wrong in it."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UsageError(f'{path} is not a configs file of export-configs (no "format": "{FORMAT}")')
    if doc.get("version") != VERSION:
        raise UsageError(f"{path} is version {shown(str(doc.get('version')))} of the configs file; this shell reads "
                         f"version {VERSION}")
    snap = Snapshot(sections=tuple(s for s in SECTIONS if s in doc))
    if BROKER_DEFAULTS in doc:
        snap.configs[BROKER_DEFAULTS][""] = _configs(doc[BROKER_DEFAULTS], f"{path}: {BROKER_DEFAULTS}")
    for section in (BROKERS, TOPICS, GROUPS):
        entities = doc.get(section, {})
        if not isinstance(entities, dict):
            raise UsageError(f"{path}: {section} must be an object of name -> configs")
        for name, values in entities.items():
            if section == BROKERS and not (name.isascii() and name.isdigit()):
                raise UsageError(f"{path}: {section}: {shown(name)} is no broker id")
            snap.configs[section][name] = _configs(values, f"{path}: {section}.{shown(name)}")
    left_out = doc.get("sensitive_left_out", {})
    if not isinstance(left_out, dict):
        raise UsageError(f"{path}: sensitive_left_out must be an object")
    for section in (BROKERS, TOPICS, GROUPS):
        snap.sensitive[section] = {n: [str(k) for k in keys] for n, keys in (left_out.get(section) or {}).items()
                                   if isinstance(keys, list)}
    if isinstance(left_out.get(BROKER_DEFAULTS), list):
        snap.sensitive[BROKER_DEFAULTS] = {"": [str(k) for k in left_out[BROKER_DEFAULTS]]}
    for n, item in enumerate(doc.get(QUOTAS, []) if isinstance(doc.get(QUOTAS, []), list) else [None]):
        where = f"{path}: {QUOTAS}[{n}]"
        if not (isinstance(item, dict) and isinstance(item.get("entity"), dict) and isinstance(item.get("quotas"), dict)
                and item["entity"] and all(t in quotas.PART_ORDER for t in item["entity"])):
            raise UsageError(f'{where} must be {{"entity": {{"user": NAME or null, ...}}, "quotas": {{KEY: NUMBER}}}} '
                             f"(entity types: {', '.join(quotas.PART_ORDER)})")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in item["quotas"].values()):
            raise UsageError(f"{where}: quota values are numbers")
        entity = tuple(sorted(((t, None if v is None else str(v)) for t, v in item["entity"].items()),
                              key=lambda p: quotas.PART_ORDER[p[0]]))
        snap.quotas[entity] = dict(item["quotas"])
    return snap


def _configs(values: object, where: str) -> Configs:
    """Config values as Kafka takes them (text); numbers and booleans written bare are taken too."""
    if not isinstance(values, dict):
        raise UsageError(f"{where} must be an object of config name -> value")
    out = {}
    for key, value in values.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str):
            raise UsageError(f"{where}: {shown(key)} must be a value (text, a number or true/false), not "
                             f"{type(value).__name__ if value is not None else 'null'}")
        out[key] = value
    return out
