"""Reading `--output json` in tests, whatever the shape: one place to change when it changes."""

from __future__ import annotations

import json
from typing import Any


def json_tables(stdout: str) -> dict[str, list[dict[str, Any]]]:
    """Every table of a `--output json` result, by name ("" for an unnamed single table)."""
    data = json.loads(stdout)
    if isinstance(data, list):
        return {"": data}
    return data


def json_rows(stdout: str, name: str | None = None) -> list[dict[str, Any]]:
    """The rows of the table called `name`, or of the only (or first) table when no name is given."""
    tables = json_tables(stdout)
    if name is not None and name in tables:
        return tables[name]
    if name is not None and len(tables) > 1:
        raise KeyError(f"no table {name!r} in {sorted(tables)}")
    return next(iter(tables.values()))
