"""Named clusters: `clusters.json` in the user's config directory, plus a small `state.json` that
remembers the current one (so the main file can stay read-only, as kafkactl does).

    {"clusters": {"prod": {"bootstrap": "k1:9092,k2:9092",
                           "properties": {"security.protocol": "SASL_SSL",
                                          "sasl.password": "${PROD_KAFKA_PASSWORD}"}}}}

`${ENV}` in any value is expanded when the cluster is used. Files are written atomically
(temp file, mode 0600, rename): they may hold secrets.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from kafka_shell.errors import UsageError
from kafka_shell.paths import config_dir, write_json_atomically

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def clusters_file() -> Path:
    return config_dir() / "clusters.json"


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"Cannot read {path}: {exc} (fix or remove the file)") from None
    if not isinstance(data, dict):
        raise UsageError(f"Cannot read {path}: expected a JSON object (fix or remove the file)")
    return data


def load() -> dict[str, dict]:
    """name -> {"bootstrap": ..., "properties": {...}} (values not yet expanded)."""
    clusters = _read_json(clusters_file()).get("clusters", {})
    if not isinstance(clusters, dict):
        raise UsageError(f'Cannot read {clusters_file()}: "clusters" must be an object')
    return clusters


def current() -> str | None:
    return _read_json(config_dir() / "state.json").get("current")


def set_current(name: str) -> None:
    get(name)  # must exist
    write_json_atomically(config_dir() / "state.json", {"current": name})


def add(name: str, bootstrap: str, properties: dict[str, str] | None = None) -> None:
    data = _read_json(clusters_file())
    data.setdefault("clusters", {})[name] = {"bootstrap": bootstrap, "properties": properties or {}}
    write_json_atomically(clusters_file(), data)


def get(name: str) -> tuple[str, dict[str, str]]:
    """(bootstrap, properties) of a named cluster with `${ENV}` expanded."""
    clusters = load()
    entry = clusters.get(name)
    if not isinstance(entry, dict) or not entry.get("bootstrap"):
        known = ", ".join(sorted(clusters)) or f"none: add one to {clusters_file()}"
        raise UsageError(f'Unknown cluster "{name}" (known clusters: {known})')
    props = entry.get("properties") or {}
    return _expand(entry["bootstrap"], name), {str(k): _expand(str(v), name) for k, v in props.items()}


def _expand(value: str, cluster: str) -> str:
    def sub(m: re.Match) -> str:
        if m.group(1) not in os.environ:
            raise UsageError(f'Cluster "{cluster}" uses ${{{m.group(1)}}}, which is not set: '
                             f"export it and retry")
        return os.environ[m.group(1)]
    return _ENV_REF.sub(sub, value)
