"""Reading `--output json` in tests: one place that knows its shape (an object whose keys name
the result's tables)."""

from __future__ import annotations

import json
from typing import Any


def json_tables(stdout: str) -> dict[str, list[dict[str, Any]]]:
    """Every table of a `--output json` result, by name."""
    data = json.loads(stdout)
    if not isinstance(data, dict) or not all(isinstance(rows, list) for rows in data.values()):
        raise ValueError(f"--output json is not an object of table name -> rows: {stdout[:200]!r}")
    return data


def json_rows(stdout: str, name: str | None = None) -> list[dict[str, Any]]:
    """The rows of the table called `name`, or of the only (or first) table when no name is given."""
    tables = json_tables(stdout)
    if name is not None and name in tables:
        return tables[name]
    if name is not None and len(tables) > 1:
        raise KeyError(f"no table {name!r} in {sorted(tables)}")
    return next(iter(tables.values()))


def json_data(stdout: str) -> list[dict[str, Any]] | dict[str, list[dict[str, Any]]]:
    """For helpers that read many commands: the rows of a one-table result, else every table by name."""
    tables = json_tables(stdout)
    return next(iter(tables.values())) if len(tables) == 1 else tables


def json_documents(text: str) -> list:
    """The JSON documents printed one after another (one per command of a replay or `;` line;
    `{}` for a command without tables)."""
    decoder, docs, i = json.JSONDecoder(), [], 0
    while i < len(text):
        doc, i = decoder.raw_decode(text, i)
        docs.append(doc)
        while i < len(text) and text[i].isspace():
            i += 1
    return docs
