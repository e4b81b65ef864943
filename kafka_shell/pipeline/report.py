"""The analysis as one self-contained HTML page an operator reads at a glance (after Cruise
Control's and kafka-ui's views): a headline card per cluster, most severe first (offline and
under-min-ISR partitions, missing broker ids, controller moves, groups whose lag grows, the
fullest disk); a fleet overview; a tab per cluster with its charts, its plans (each with the
exact command that checks it and the one that applies it) and sortable tables. Bytes in IEC
units, times in the reader's local time zone, broker ids as categories.

No network: plotly.js (from the plotly package) and the data are inlined into the page
(report_page.html, beside this file), whose own script draws everything from the data. It counts script errors in <html data-errors>, which
the tests read in headless Chromium.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

ROWS_PER_CLUSTER = 1000  # rows of a table embedded per cluster (tables/*.json hold them all)


def write(path: Path, tables: dict[str, list[dict]], summary: dict[str, Any]) -> None:
    embedded: dict[str, list[dict]] = {}
    totals: dict[str, dict[str, int]] = {}
    for name, rows in tables.items():
        kept: dict[str, int] = {}
        embedded[name] = []
        for r in rows:
            c = r.get("cluster_id", "")
            kept[c] = kept.get(c, 0) + 1
            if kept[c] <= ROWS_PER_CLUSTER:
                embedded[name].append(r)
        totals[name] = kept
    data = json.dumps({"summary": summary, "tables": embedded, "totals": totals}, default=str, separators=(",", ":"))
    plotly = (resources.files("plotly") / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
    page = resources.files("kafka_shell.pipeline").joinpath("report_page.html").read_text(encoding="utf-8")
    # Split on the two markers first, so that neither inlined text is searched for the other's.
    head, rest = page.split("/*PLOTLY*/")
    middle, tail = rest.split("/*DATA*/")
    path.write_text(head + plotly.replace("</script", "<\\/script") + middle + data.replace("</", "<\\/") + tail,
                    encoding="utf-8")
