"""What the analysis derives from Spark's small results (rows per broker, per snapshot, per
group): load and skew per broker and rack, trends, forecasts and the headline per cluster.
Plain Python on a few thousand rows; the scans and aggregations stay in Spark (`jobs`).

Forecasts are least-squares lines through the snapshots: a log dir's used bytes against time
give its growth per day, and its usable bytes divided by that growth the days until it is full;
a group's lag against time gives its growth per hour (growing when the line rises and the last
lag is above the first); controller churn is the moves of the active controller per UTC day.
"""

from __future__ import annotations

import datetime
from typing import Any

# Severity thresholds of the headline.
DISK_CRITICAL_DAYS = 7
DISK_WARNING_DAYS = 30
CONTROLLER_MOVES_PER_DAY_WARNING = 1.0
SEVERITIES = ("critical", "warning", "ok")


def load_tables(counts: dict[tuple[str, int], dict], brokers: list[dict],
                held_bytes: dict[tuple[str, int], int]) -> dict[str, list[dict]]:
    """broker_load: every live broker and every id replicas name that no live broker has
    (state "missing"), with replicas, leaders, bytes and their skew against the mean of the
    cluster's live brokers; rack_load: the same per rack of live brokers, the skew of the rack's
    load per broker against the cluster's."""
    rows: dict[tuple[str, int], dict] = {}
    for b in brokers:
        rows[(b["cluster_id"], b["broker_id"])] = {"cluster_id": b["cluster_id"], "broker_id": b["broker_id"],
                                                   "rack": b["rack"], "state": b["state"] or "live"}
    for key in counts:
        rows.setdefault(key, {"cluster_id": key[0], "broker_id": key[1], "rack": None, "state": "missing"})
    for key, r in rows.items():
        c = counts.get(key, {})
        r.update(replicas=c.get("replicas", 0), leaders=c.get("leaders", 0), bytes=held_bytes.get(key, 0))
    per_broker = sorted(rows.values(), key=lambda r: (r["cluster_id"], r["broker_id"]))
    measures = ("replicas", "leaders", "bytes")
    clusters = sorted({r["cluster_id"] for r in per_broker})
    racks: list[dict] = []
    for cluster in clusters:
        live = [r for r in per_broker if r["cluster_id"] == cluster and r["state"] == "live"]
        means = {m: sum(r[m] for r in live) / len(live) if live else 0 for m in measures}
        for r in per_broker:
            if r["cluster_id"] == cluster:
                r.update({f"{m}_skew": _skew(r[m], means[m]) for m in measures})
        by_rack: dict[str, list[dict]] = {}
        for r in live:
            by_rack.setdefault(r["rack"] if r["rack"] is not None else "(none)", []).append(r)
        for rack, members in sorted(by_rack.items()):
            row: dict[str, Any] = {"cluster_id": cluster, "rack": rack, "brokers": len(members)}
            row.update({m: sum(r[m] for r in members) for m in measures})
            row.update({f"{m}_skew": _skew(row[m] / len(members), means[m]) for m in measures})
            racks.append(row)
    return {"broker_load": per_broker, "rack_load": racks}


def balance_goals(broker_load: list[dict], moves: list[dict]) -> list[dict]:
    """Per cluster, the balance goals the per-broker load can judge (replicas, leaders and bytes
    per live broker: kafka_shell/admin/balance.py's bounds) before and after the rebalance plan's
    moves: each goal's skew (the largest distance from a broker's target, over the mean) and
    whether it is met. The plan moves replicas inside racks, so rack spread stays as it is."""
    from kafka_shell.admin import balance
    out = []
    for cluster in sorted({b["cluster_id"] for b in broker_load}):
        live = {b["broker_id"]: b for b in broker_load if b["cluster_id"] == cluster and b["state"] == "live"}
        if not live:
            continue
        before = {m: {b: float(r[m] or 0) for b, r in live.items()} for m in ("replicas", "leaders", "bytes")}
        after = {m: dict(v) for m, v in before.items()}
        for mv in moves:
            if mv["cluster_id"] != cluster or mv["from"] not in live or mv["to"] not in live:
                continue
            for measure, amount in (("replicas", 1), ("bytes", mv.get("size") or 0), ("leaders", 1 if mv.get("leader") else 0)):
                after[measure][mv["from"]] -= amount
                after[measure][mv["to"]] += amount
        members = sorted(live)
        for goal, measure in ((balance.REPLICAS, "replicas"), (balance.LEADERS, "leaders"), (balance.DISK, "bytes")):
            if measure == "bytes":
                bounds = balance.value_bounds(before[measure], members, set(members), None, 0.10, balance.MIN_BYTES_SLACK)
            else:
                bounds = {b: (float(lo), float(hi)) for b, (lo, hi) in
                          balance.count_bounds(before[measure], members, set(members)).items()}
            row = {"cluster_id": cluster, "goal": goal, "title": balance.TITLES[goal]}
            for when, values in (("before", before[measure]), ("after", after[measure])):
                mean = sum(values.values()) / len(values)
                row[f"{when}_skew"] = round(max(abs(values[b] - sum(bounds[b]) / 2) for b in members) / mean, 4) if mean else 0.0
                row[f"{when}_met"] = all(bounds[b][0] - 1e-9 <= values[b] <= bounds[b][1] + 1e-9 for b in members)
            out.append(row)
    return out


def _skew(value: float, mean: float) -> float | None:
    return round(value / mean - 1, 4) if mean > 0 else None


def _at(iso: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(iso)


def slope(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of y against x; None with fewer than two distinct x."""
    if len({x for x, _ in points}) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def _growth(rows: list[dict], key: tuple[str, ...], values: tuple[str, ...]) -> list[dict]:
    """First and last value of each series (rows sorted by time within a key) and the change."""
    series: dict[tuple, list[dict]] = {}
    for r in rows:
        series.setdefault(tuple(r[k] for k in key), []).append(r)
    out = []
    for k, rs in sorted(series.items()):
        rs.sort(key=lambda r: r["taken_at"])
        row: dict[str, Any] = {**dict(zip(key, k)), "first": rs[0]["taken_at"], "last": rs[-1]["taken_at"]}
        for v in values:
            row.update({f"{v}_first": rs[0][v], f"{v}_last": rs[-1][v], f"{v}_growth": rs[-1][v] - rs[0][v]})
        out.append(row)
    return out


def used_bytes(log_dirs: list[dict]) -> dict[tuple[str, str], int]:
    """(cluster, snapshot time) -> the bytes used on its log dirs (total - usable), for the
    snapshots whose every log dir told both (DescribeLogDirs v4+); the others are left out."""
    used: dict[tuple[str, str], int] = {}
    untold: set[tuple[str, str]] = set()
    for r in log_dirs:
        key = (r["cluster_id"], r["taken_at"])
        if r["total_bytes"] is None or r["usable_bytes"] is None:
            untold.add(key)
        else:
            used[key] = used.get(key, 0) + r["total_bytes"] - r["usable_bytes"]
    return {k: v for k, v in used.items() if k not in untold}


def trends(small: dict[str, list[dict]], health: list[dict], dirs: list[dict], lag: list[dict],
           latest_at: dict[str, int]) -> dict[str, list[dict]]:
    """Across snapshots: the controller over time, its moves and churn per day; partitions and
    bytes per cluster and their growth; lag per group, its growth and whether it grows; and
    per broker and log dir of each latest snapshot, the days until the disk is full."""
    controller = [{k: r[k] for k in ("cluster_id", "taken_at", "controller_id", "controller_epoch")}
                  for r in small["cluster"]]
    moves = [{"cluster_id": b["cluster_id"], "when": b["taken_at"], "from": a["controller_id"], "to": b["controller_id"],
              "epoch": b["controller_epoch"]}
             for a, b in zip(controller, controller[1:])
             if a["cluster_id"] == b["cluster_id"] and a["controller_id"] != b["controller_id"]]
    churn: dict[tuple[str, str], dict] = {}
    for r in controller:
        day = churn.setdefault((r["cluster_id"], r["taken_at"][:10]),
                               {"cluster_id": r["cluster_id"], "day": r["taken_at"][:10], "snapshots": 0, "moves": 0})
        day["snapshots"] += 1
    for m in moves:
        churn[(m["cluster_id"], m["when"][:10])]["moves"] += 1
    # Bytes on disk: what the log dirs say they use, else (older brokers, format 1) the replicas' sizes.
    held: dict[tuple[str, str], int] = {}
    for d in dirs:
        held[(d["cluster_id"], d["taken_at"])] = held.get((d["cluster_id"], d["taken_at"]), 0) + d["bytes"]
    bytes_at = {**held, **used_bytes(small["log_dirs"])}
    over_time = [{"cluster_id": h["cluster_id"], "taken_at": h["taken_at"], "bytes": bytes_at.get((h["cluster_id"], h["taken_at"]), 0),
                  "partitions": h["partitions"]} for h in health]
    return {"controller_moves": moves, "controller_over_time": controller,
            "controller_churn": [churn[k] for k in sorted(churn)],
            "size_over_time": over_time, "growth": _growth(over_time, ("cluster_id",), ("partitions", "bytes")),
            "lag_over_time": lag, "lag_growth": lag_trends(lag),
            "disk_forecast": disk_forecast(small["log_dirs"], dirs, latest_at)}


def lag_trends(lag: list[dict]) -> list[dict]:
    """Per cluster and group: first, last and change of the lag, its slope per hour, growing."""
    rows = _growth(lag, ("cluster_id", "group"), ("lag",))
    for row in rows:
        series = [r for r in lag if (r["cluster_id"], r["group"]) == (row["cluster_id"], row["group"])]
        t0 = _at(series[0]["taken_at"])
        per_hour = slope([((_at(r["taken_at"]) - t0).total_seconds() / 3600, r["lag"]) for r in series])
        row["lag_per_hour"] = round(per_hour, 3) if per_hour is not None else None
        row["growing"] = bool(per_hour is not None and per_hour > 0 and row["lag_growth"] > 0)
    return rows


def disk_forecast(log_dirs: list[dict], dirs: list[dict], latest_at: dict[str, int]) -> list[dict]:
    """Per broker and log dir in each cluster's latest snapshot: used bytes (total - usable
    where the broker tells them, else the bytes of its replicas there), their growth per day
    across the snapshots, and the days until the usable bytes run out (None when not growing
    or the capacity is unknown)."""
    told = {(r["cluster_id"], r["taken_at"], r["broker_id"], r["log_dir"]): r for r in log_dirs}
    held = {(r["cluster_id"], r["taken_at"], r["broker_id"], r["log_dir"]): r["bytes"] for r in dirs}
    series: dict[tuple[str, int, str | None], list[tuple[str, int, int | None, int | None]]] = {}
    for key in sorted(set(told) | set(held), key=lambda k: (k[0], k[2], k[3] or "", k[1])):
        d = told.get(key)
        total, usable = (d["total_bytes"], d["usable_bytes"]) if d else (None, None)
        used = total - usable if total is not None and usable is not None else held.get(key, 0)
        series.setdefault((key[0], key[2], key[3]), []).append((key[1], used, total, usable))
    out = []
    for (cluster, broker, log_dir), points in series.items():
        last_at, used, total, usable = points[-1]
        if int(_at(last_at).timestamp() * 1000) != latest_at[cluster]:
            continue  # a dir the latest snapshot does not list (its broker is gone)
        t0 = _at(points[0][0])
        per_day = slope([((_at(at) - t0).total_seconds() / 86400, u) for at, u, _, _ in points])
        days = usable / per_day if per_day and per_day > 0 and usable is not None else None
        out.append({"cluster_id": cluster, "broker_id": broker, "log_dir": log_dir, "first": points[0][0], "last": last_at,
                    "snapshots": len(points), "used_bytes": used, "total_bytes": total, "usable_bytes": usable,
                    "growth_bytes_per_day": round(per_day) if per_day is not None else None,
                    "days_to_full": round(days, 3) if days is not None else None,
                    "full_at": (_at(last_at) + datetime.timedelta(days=days)).isoformat() if days is not None else None})
    return out


def headline(clusters: list[str], tables: dict[str, list[dict]]) -> list[dict]:
    """Per cluster, what an operator looks at first (its latest snapshot, and trends over the
    series), with a severity; the most severe clusters first."""
    out = []
    for c in clusters:
        health = [h for h in tables["health"] if h["cluster_id"] == c]
        last = health[-1]
        moves = [m for m in tables["controller_moves"] if m["cluster_id"] == c]
        span = (_at(last["taken_at"]) - _at(health[0]["taken_at"])).total_seconds() / 86400
        disks = [d["days_to_full"] for d in tables["disk_forecast"] if d["cluster_id"] == c and d["days_to_full"] is not None]
        row: dict[str, Any] = {
            "cluster_id": c, "taken_at": last["taken_at"], "snapshots": len(health), "partitions": last["partitions"],
            "brokers": sum(1 for b in tables["broker_load"] if b["cluster_id"] == c and b["state"] == "live"),
            "offline": last["offline"], "under_min_isr": last["under_min_isr"], "under_replicated": last["under_replicated"],
            "missing_broker_ids": sum(1 for m in tables["missing_brokers"] if m["cluster_id"] == c),
            "controller_moves": len(moves),
            "controller_moves_per_day": round(len(moves) / span, 2) if span > 0 else None,
            "lag_growing": sum(1 for g in tables["lag_growth"] if g["cluster_id"] == c and g["growing"]),
            "min_days_to_full": min(disks) if disks else None,
            "failed_snapshots": sum(1 for f in tables["failed_snapshots"] if f["cluster_id"] == c)}
        row["severity"] = severity(row)
        out.append(row)
    return sorted(out, key=lambda r: (SEVERITIES.index(r["severity"]), r["cluster_id"]))


def severity(h: dict[str, Any]) -> str:
    days = h["min_days_to_full"]
    if h["offline"] or h["under_min_isr"] or h["missing_broker_ids"] or (days is not None and days < DISK_CRITICAL_DAYS):
        return "critical"
    churn = h["controller_moves_per_day"]
    if (h["under_replicated"] or h["lag_growing"] or h["failed_snapshots"] or (days is not None and days < DISK_WARNING_DAYS)
            or (churn is not None and churn >= CONTROLLER_MOVES_PER_DAY_WARNING)):
        return "warning"
    return "ok"
