"""The analysis as one self-contained HTML page: plotly charts with plotly's JavaScript inlined
(it opens with no network) and the main tables. Charts: health over time (offline and
under-replicated partitions per cluster), broker load and rack load in each cluster's latest
snapshot, consumer lag per group over time, and the active controller over time (its moves).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

TABLE_ROWS = 50  # rows shown per table (the JSON files hold them all)


def write(path: Path, tables: dict[str, list[dict]], summary: dict[str, Any]) -> None:
    import plotly.graph_objects as go

    charts: list[tuple[str, Any]] = []
    health = go.Figure()
    for cluster in sorted({r["cluster_id"] for r in tables["health"]}):
        rows = [r for r in tables["health"] if r["cluster_id"] == cluster]
        for kind in ("offline", "under_replicated", "under_min_isr"):
            health.add_trace(go.Scatter(x=[r["taken_at"] for r in rows], y=[r[kind] for r in rows],
                                        mode="lines+markers", name=f"{cluster} {kind}"))
    health.update_layout(title="Partition health over time", xaxis_title="snapshot", yaxis_title="partitions")
    charts.append(("health", health))

    load = go.Figure()
    for cluster in sorted({r["cluster_id"] for r in tables["broker_load"]}):
        rows = [r for r in tables["broker_load"] if r["cluster_id"] == cluster]
        load.add_trace(go.Bar(x=[str(r["broker_id"]) for r in rows], y=[r["replicas"] for r in rows], name=cluster))
    load.update_layout(title="Replicas per broker (latest snapshot)", xaxis_title="broker", yaxis_title="replicas",
                       barmode="group")
    charts.append(("broker-load", load))

    racks = go.Figure()
    for cluster in sorted({r["cluster_id"] for r in tables["rack_load"]}):
        rows = [r for r in tables["rack_load"] if r["cluster_id"] == cluster]
        racks.add_trace(go.Bar(x=[r["rack"] for r in rows], y=[r["replicas"] / max(1, r["brokers"]) for r in rows],
                               text=[f"skew {r['replicas_skew']:+.1%}" if r["replicas_skew"] is not None else "" for r in rows],
                               name=cluster))
    racks.update_layout(title="Replicas per broker in each rack (latest snapshot; skew against the cluster mean)",
                        yaxis_title="replicas per broker", barmode="group")
    charts.append(("rack-load", racks))

    lag = go.Figure()
    for key in sorted({(r["cluster_id"], r["group"]) for r in tables["lag_over_time"]}):
        rows = [r for r in tables["lag_over_time"] if (r["cluster_id"], r["group"]) == key]
        lag.add_trace(go.Scatter(x=[r["taken_at"] for r in rows], y=[r["lag"] for r in rows],
                                 mode="lines+markers", name=f"{key[0]} {key[1]}"))
    lag.update_layout(title="Consumer lag per group", xaxis_title="snapshot", yaxis_title="messages behind")
    charts.append(("lag", lag))

    controller = go.Figure()
    for cluster in sorted({r["cluster_id"] for r in tables["controller_over_time"]}):
        rows = [r for r in tables["controller_over_time"] if r["cluster_id"] == cluster]
        controller.add_trace(go.Scatter(x=[r["taken_at"] for r in rows], y=[r["controller_id"] for r in rows],
                                        mode="lines+markers", line_shape="hv", name=cluster))
    controller.update_layout(title="Active controller over time (each step is a move)", yaxis_title="controller id")
    charts.append(("controller", controller))

    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>kafka-shell fleet analysis</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}</style></head><body>",
             "<h1>Fleet analysis</h1>", _table("Summary", [{k: v for k, v in summary.items() if k != "plans"}])]
    for i, (name, fig) in enumerate(charts):
        parts.append(f"<div class='chart' id='chart-{name}'>"
                     + fig.to_html(full_html=False, include_plotlyjs=(i == 0), div_id=f"plot-{name}") + "</div>")
    for title, name in (("KIP-426 missing broker ids", "missing_brokers"), ("Controller moves", "controller_moves"),
                        ("Growth per cluster", "growth"), ("Consumer lag growth", "lag_growth"),
                        ("Recovery plan", "recovery"), ("Rebalance moves", "rebalance"),
                        ("Rack load", "rack_load"), ("Health per snapshot", "health")):
        parts.append(_table(f"{title} ({len(tables[name])} rows)", tables[name][:TABLE_ROWS]))
    parts.append("</body></html>")
    path.write_text("\n".join(parts))


def _table(title: str, rows: list[dict]) -> str:
    if not rows:
        return f"<h2>{html.escape(title)}</h2><p>None.</p>"
    cols = list(rows[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(c)))}</td>" for c in cols) + "</tr>" for r in rows)
    return f"<h2>{html.escape(title)}</h2><table><tr>{head}</tr>{body}</table>"
