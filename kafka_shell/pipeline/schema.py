"""The snapshot format, shared by `snapshot` (a real cluster), `synth` (a synthetic fleet) and
the Spark jobs that read it.

One directory per cluster and time: `D/<cluster id>/<UTC time>/`, holding one Parquet file per
table below and `manifest.json` (format, cluster id, mode, time, controller, row counts). Every
table carries `cluster_id` and `taken_at`, so a glob over many snapshots reads as one table.

A round of `snapshot --every` that failed leaves only a manifest with `failed` (the reason):
readers skip it as a snapshot and count it as a gap. Format 1 (before log dirs were recorded)
still reads: its replicas have no `log_dir` and it has no `log_dirs` table. Format 2 still reads:
its partitions lack the counts of format 3 (readers take them from the lists).
"""

from __future__ import annotations

import datetime
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa

FORMAT = 3
READABLE_FORMATS = (1, 2, 3)
COUNTED_FORMAT = 3  # the first whose partitions carry DERIVED_PARTITION_COLUMNS
MANIFEST = "manifest.json"
STAMP = "%Y%m%dT%H%M%S.%fZ"
# Rows per Parquet row group: each has its own min/max statistics, so a reader filtering on a
# column the rows are sorted by (topic) skips the groups outside its range, and a big table's
# groups spread over the scan's tasks (a file's single row group would be one task's work).
ROW_GROUP_ROWS = 65_536

_ids = pa.list_(pa.int32())
_KEY = [("cluster_id", pa.string()), ("taken_at", pa.timestamp("ms", tz="UTC"))]
_PARTITION = [("topic", pa.string()), ("partition", pa.int32())]

SCHEMAS: dict[str, pa.Schema] = {
    "cluster": pa.schema(_KEY + [("mode", pa.string()), ("controller_id", pa.int32()),
                                 ("controller_epoch", pa.int32())]),
    # Metadata lists live brokers only: a replica on an id missing here is on a dead broker.
    "brokers": pa.schema(_KEY + [("broker_id", pa.int32()), ("host", pa.string()), ("port", pa.int32()),
                                 ("rack", pa.string()), ("state", pa.string())]),
    "topics": pa.schema(_KEY + [("topic", pa.string()), ("topic_id", pa.string()), ("partitions", pa.int32()),
                                ("replication_factor", pa.int32()), ("min_isr", pa.int32()),
                                ("configs", pa.map_(pa.string(), pa.string()))]),
    # From format 3 each partition also carries what the health of many snapshots is counted
    # from (DERIVED_PARTITION_COLUMNS): a reader of months of snapshots then scans a few int
    # columns, not every replica and ISR list and a join with the topics.
    "partitions": pa.schema(_KEY + _PARTITION + [
        ("leader", pa.int32()), ("leader_epoch", pa.int32()), ("replicas", _ids), ("isr", _ids),
        ("elr", _ids), ("offline_replicas", _ids), ("replica_count", pa.int32()), ("isr_count", pa.int32()),
        ("preferred", pa.int32()), ("min_isr", pa.int32())]),
    # DescribeLogDirs of the live brokers; log_end_offset and last_epoch only where the cluster
    # tells them (replicas of offline partitions: GetReplicaLogInfo or ListOffsets replica -2).
    "replicas": pa.schema(_KEY + _PARTITION + [
        ("broker_id", pa.int32()), ("size", pa.int64()), ("offset_lag", pa.int64()),
        ("log_end_offset", pa.int64()), ("last_epoch", pa.int32()), ("log_dir", pa.string())]),
    # One row per log dir of each live broker; total and usable bytes where the broker tells them
    # (DescribeLogDirs v4+, KIP-827), else null.
    "log_dirs": pa.schema(_KEY + [("broker_id", pa.int32()), ("log_dir", pa.string()),
                                  ("total_bytes", pa.int64()), ("usable_bytes", pa.int64())]),
    "offsets": pa.schema(_KEY + _PARTITION + [("log_start_offset", pa.int64()), ("log_end_offset", pa.int64())]),
    "group_offsets": pa.schema(_KEY + [("group", pa.string())] + _PARTITION + [("committed_offset", pa.int64())]),
}
TABLES = tuple(SCHEMAS)
DERIVED_PARTITION_COLUMNS = ("replica_count", "isr_count", "preferred", "min_isr")


def stamp(taken_at: datetime.datetime) -> str:
    return taken_at.astimezone(datetime.UTC).strftime(STAMP)


def snapshot_dir(root: Path, cluster_id: str, taken_at: datetime.datetime) -> Path:
    return root / cluster_id / stamp(taken_at)


def write_snapshot(directory: Path, tables: dict[str, pa.Table], manifest: dict[str, Any]) -> Path:
    """Write the tables (each cast to its schema) and then the manifest, which marks the
    snapshot complete: readers skip directories without one."""
    import pyarrow.parquet as pq
    directory.mkdir(parents=True, exist_ok=False)
    tables = {**tables, "partitions": with_counts(tables["partitions"], tables["topics"])}

    def write(name: str) -> tuple[str, int]:
        table = tables[name].select(SCHEMAS[name].names).cast(SCHEMAS[name])
        pq.write_table(table, directory / f"{name}.parquet", compression="zstd", row_group_size=ROW_GROUP_ROWS)
        return name, table.num_rows
    # Two files at once: Arrow encodes and compresses them outside the GIL.
    with ThreadPoolExecutor(2) as pool:
        counts = dict(pool.map(write, TABLES))
    body = {"format": FORMAT, **manifest, "rows": counts}
    (directory / MANIFEST).write_text(json.dumps(body, indent=2) + "\n")
    return directory


def with_counts(partitions: pa.Table, topics: pa.Table) -> pa.Table:
    """The partitions with DERIVED_PARTITION_COLUMNS: replicas and ISR sizes, the preferred
    replica (the first; null for none) and the topic's min.insync.replicas (null when unknown)."""
    import pyarrow.compute as pc
    partitions = partitions.drop_columns([c for c in DERIVED_PARTITION_COLUMNS if c in partitions.column_names])
    replicas = partitions["replicas"]
    # list_element refuses an empty list: those (and nulls) become [null] first.
    nonempty = pc.if_else(pc.greater(pc.list_value_length(replicas), 0), replicas, pa.scalar([None], replicas.type))
    first = pc.list_element(nonempty, 0)
    min_isr = pc.take(topics["min_isr"], pc.index_in(partitions["topic"], topics["topic"]))
    return (partitions.append_column("replica_count", pc.list_value_length(replicas).cast(pa.int32()))
            .append_column("isr_count", pc.list_value_length(partitions["isr"]).cast(pa.int32()))
            .append_column("preferred", first.cast(pa.int32()))
            .append_column("min_isr", min_isr.cast(pa.int32())))


def write_failure(root: Path, cluster_id: str, taken_at: datetime.datetime, reason: str) -> Path:
    """Record a failed round of a series: a manifest with `failed` and no tables."""
    directory = snapshot_dir(root, cluster_id, taken_at)
    directory.mkdir(parents=True, exist_ok=False)
    body = {"format": FORMAT, "cluster_id": cluster_id, "taken_at": taken_at.isoformat(),
            "taken_at_ms": int(taken_at.timestamp() * 1000), "failed": reason}
    (directory / MANIFEST).write_text(json.dumps(body, indent=2) + "\n")
    return directory


def read_manifests(root: Path) -> list[dict[str, Any]]:
    """Every manifest under `root` (each with its `path`), failed rounds included, oldest first
    per cluster. A manifest of a format this version cannot read is refused with a clear message."""
    found = []
    for manifest in sorted(root.glob(f"*/*/{MANIFEST}")):
        body = json.loads(manifest.read_text())
        if body.get("format") not in READABLE_FORMATS:
            raise ValueError(f"{manifest}: snapshot format {body.get('format')!r}, expected one of {READABLE_FORMATS}")
        found.append({**body, "path": str(manifest.parent)})
    return sorted(found, key=lambda m: (m["cluster_id"], m["taken_at_ms"]))


def find_snapshots(root: Path) -> list[dict[str, Any]]:
    """The complete snapshots under `root` (failed rounds left out), oldest first per cluster."""
    return [m for m in read_manifests(root) if "failed" not in m]


def has_table(manifest: dict[str, Any], name: str) -> bool:
    """Whether a snapshot holds `name` (format 1 has no log_dirs)."""
    return name in manifest.get("rows", {})


def value_range(manifest: dict[str, Any], name: str, column: str) -> tuple[Any, Any] | None:
    """The least and greatest value of a column of a snapshot table, from its Parquet footer's
    statistics (no data read); None when the table is empty or lacks statistics."""
    import pyarrow.parquet as pq
    meta = pq.ParquetFile(Path(manifest["path"]) / f"{name}.parquet").metadata
    index = meta.schema.names.index(column)
    lows, highs = [], []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if meta.row_group(g).num_rows == 0:
            continue
        if stats is None or not stats.has_min_max:
            return None
        lows.append(stats.min)
        highs.append(stats.max)
    return (min(lows), max(highs)) if lows else None


def given(name: str) -> pa.Schema:
    """The columns a writer gives for a table (write_snapshot adds the derived ones)."""
    derived = DERIVED_PARTITION_COLUMNS if name == "partitions" else ()
    return pa.schema([f for f in SCHEMAS[name] if f.name not in derived])


def empty(name: str) -> pa.Table:
    return given(name).empty_table()
