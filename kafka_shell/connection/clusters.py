"""Named clusters: `clusters.json` in the user's config directory, plus a small `state.json` that
remembers the current one (so the main file can stay read-only, as kafkactl does).

    {"clusters": {"prod": {"bootstrap": "k1:9092,k2:9092",
                           "bootstrap_controller": "c1:9093",   (optional; alone: controllers only)
                           "properties": {"security.protocol": "SASL_SSL",
                                          "sasl.password": "${PROD_KAFKA_PASSWORD}"}}}}

`${ENV}` in any value is expanded when the cluster is used (env.expand_env). Files are
written atomically (temp file, mode 0600, rename) and brought to 0600 when read: they may hold
secrets.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kafka_shell.connection.client_config import clear_secrets, expand_all, readable_by_others
from kafka_shell.base.env import expand_env
from kafka_shell.base.errors import UsageError
from kafka_shell.base.files import locked, read_owned, write_json_owned
from kafka_shell.base.paths import config_dir


def clusters_file() -> Path:
    return config_dir() / "clusters.json"


def _read_json(path: Path) -> dict:
    """The file's object ({} when there is none); the file is brought to mode 0600 (saying so
    when others could read secrets it holds)."""
    loose = readable_by_others(path)
    try:
        text = read_owned(path)
        data = json.loads(text) if text is not None else {}
    except (OSError, ValueError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "nested too deeply" \
            if isinstance(exc, RecursionError) else exc
        raise UsageError(f"Cannot read {path}: {reason} (fix or remove the file)") from None
    if not isinstance(data, dict):
        raise UsageError(f"Cannot read {path}: expected a JSON object (fix or remove the file)")
    if loose is not None:
        _warn_exposed(path, data, loose)
    return data


def _warn_exposed(path: Path, data: dict, mode: int) -> None:
    clusters = data.get("clusters")
    exposed = [f"{key} of {name}" for name, entry in (clusters.items() if isinstance(clusters, dict) else ())
               if isinstance(entry, dict) and isinstance(entry.get("properties"), dict)
               for key in clear_secrets({str(k): str(v) for k, v in entry["properties"].items()})]
    if exposed:
        now = "it is 0600 now" if readable_by_others(path) is None else f"chmod 600 {path}"
        sys.stderr.write(f"Warning: {path} holds {', '.join(exposed)} and other users could read it (mode "
                         f"{mode:o}): {now}; change those secrets if others may have read them.\n")


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
    write_json_owned(config_dir() / "state.json", {"current": name})


def add(name: str, bootstrap: str, properties: dict[str, str] | None = None,
        bootstrap_controller: str | None = None) -> None:
    entry: dict = {"bootstrap": bootstrap, "properties": properties or {}}
    if bootstrap_controller:
        entry["bootstrap_controller"] = bootstrap_controller
    with locked(clusters_file()):   # a cluster another shell adds meanwhile is kept
        data = _read_json(clusters_file())
        data.setdefault("clusters", {})[name] = entry
        write_json_owned(clusters_file(), data)


def get(name: str) -> tuple[str, dict[str, str], str | None]:
    """(bootstrap, properties, bootstrap controllers) of a named cluster with `${ENV}` expanded;
    the bootstrap is "" for a cluster of controllers only."""
    clusters = load()
    entry = clusters.get(name)
    if not isinstance(entry, dict) or not (entry.get("bootstrap") or entry.get("bootstrap_controller")):
        known = ", ".join(sorted(clusters)) or f"none: add one to {clusters_file()}"
        raise UsageError(f'Unknown cluster "{name}" (known clusters: {known})')
    props = entry.get("properties") or {}
    if not isinstance(props, dict):
        raise UsageError(f'Cannot read {clusters_file()}: "properties" of "{name}" must be an object')
    where = f'Cluster "{name}"'
    controllers = entry.get("bootstrap_controller")
    return (expand_env(str(entry.get("bootstrap") or ""), where),
            expand_all({str(k): str(v) for k, v in props.items()}, where),
            expand_env(str(controllers), where) if controllers else None)
