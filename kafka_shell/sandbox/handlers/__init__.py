"""API handlers of the sandbox brokers, registered by API key.

A handler is `fn(ctx: RequestContext) -> dict` (or a coroutine returning one): the response as a
dict tree, which the server turns into the negotiated version's kio entity. `ctx.request` is the
decoded kio request entity; `ctx.version` its version.

Each module below registers its APIs with `@api(key)`. Versions served are the contiguous range
kio has (see `protocol.kio_versions`), optionally narrowed with `min_version` / `max_version`.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable

from kafka_shell.protocol import codec


@dataclasses.dataclass(frozen=True)
class Api:
    key: int
    versions: range
    handler: Callable
    controller_only: bool


HANDLERS: dict[int, Api] = {}



def api(key: int, min_version: int | None = None, max_version: int | None = None,
        controller_only: bool = False) -> Callable:
    def register(fn: Callable) -> Callable:
        served = codec.kio_versions(key)
        low = served.start if min_version is None else max(served.start, min_version)
        high = served.stop - 1 if max_version is None else min(served.stop - 1, max_version)
        HANDLERS[key] = Api(key, range(low, high + 1), fn, controller_only)
        return fn
    return register


def load() -> dict[int, Api]:
    """Import every handler module of this package once (each registers its APIs)."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return HANDLERS
