"""What the Python client drivers share (each runs as a script beside this module): the first
non-zero error code in a client's answer, whatever shape the client gives it."""

from __future__ import annotations

from collections.abc import Callable


def first_code(value: object, leaf: Callable[[object], object] | None = None) -> int:
    """The first non-zero `error_code` in a tree of dicts, lists and tuples (structs with
    `to_object()` are read as dicts); `leaf` turns a client's own error objects into their code
    and its other objects into such a tree (anything else it returns as it is)."""
    if leaf is not None:
        converted = leaf(value)
        if converted is not value and isinstance(converted, int):
            return converted   # an error object of the client's
        value = converted
    if hasattr(value, "to_object"):
        value = value.to_object()
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "error_code" and v:
                return v
            if k != "error_code" and (code := first_code(v, leaf)):
                return code
    if isinstance(value, list | tuple):
        for v in value:
            if (code := first_code(v, leaf)):
                return code
    return 0
