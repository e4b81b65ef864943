"""A new controller's own files, as kafka-metadata-quorum add-controller reads them (its
--command-config): its server.properties (node id, controller listeners, metadata log dir) and
the meta.properties its format wrote there (directory id). Each problem is one line that says
what to give instead (a UsageError: nothing is sent).
"""

from __future__ import annotations

from pathlib import Path

from kafka_shell.base.errors import UsageError
from kafka_shell.connection.client_config import load_properties


def voter_from_config(path: str) -> tuple[int, str, list[tuple[str, str, int]]]:
    """(node id, directory id, controller listeners) from a new controller's server.properties
    and the meta.properties its format wrote, as kafka-metadata-quorum add-controller reads them."""
    props = load_properties(path)
    if not props.get("node.id", "").isdigit():
        raise UsageError(f"{path} has no node.id: give the new controller's server.properties")
    names = [n.strip() for n in props.get("controller.listener.names", "").split(",") if n.strip()]
    listeners = props.get("advertised.listeners") or props.get("listeners", "")
    endpoints = []
    for item in filter(None, (x.strip() for x in listeners.split(","))):
        name, _, rest = item.partition("://")
        host, _, port = rest.rpartition(":")
        if name in names and port.isdigit():
            endpoints.append((name, host.strip("[]") or "localhost", int(port)))
    if not endpoints:
        raise UsageError(f"{path} names no controller listener (controller.listener.names and listeners)")
    log_dir = props.get("metadata.log.dir") or props.get("log.dirs", "").split(",")[0].strip()
    meta = Path(log_dir) / "meta.properties"
    try:
        directory = load_properties(str(meta)).get("directory.id")
    except Exception:  # noqa: BLE001 - said below, in the user's terms
        directory = None
    if not directory:
        raise UsageError(f"Cannot read directory.id from {meta}: format the new controller first "
                         "(kafka-storage format --no-initial-controllers)")
    return int(props["node.id"]), directory, endpoints
