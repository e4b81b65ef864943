"""Reading the JSON files users bring (Kafka's reassignment and election formats): one way to
report a file that cannot be read or parsed, and the type check those formats need."""

from __future__ import annotations

from typing import TypeGuard

import json
from pathlib import Path

from kafka_shell.errors import UsageError


def read_json(path: str, option: str = "", hint: str = "fix the file") -> object:
    """The parsed file; a UsageError naming the file (and `option`, when given) otherwise."""
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"Cannot read {option + ' ' if option else ''}{path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
                         f"{hint}") from None


def is_int(value: object) -> TypeGuard[int]:
    """A JSON integer (JSON's true and false are not partition numbers or broker ids)."""
    return isinstance(value, int) and not isinstance(value, bool)
