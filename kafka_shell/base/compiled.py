"""Generated code compiled once per machine, not once per process.

The frame validators (protocol/frames.py), entity writers (protocol/encoders.py) and the
methods dataclasses writes for each class (base/dataclass_methods.py) are generated as Python
source; compiling it costs far more than generating it (4 ms for ConsumerGroupDescribe's
validator: a tenth of a one-shot describe-group went to compiling the validators and writers of
the messages it uses, 5 ms of a list-topics, and as much again to the dataclass methods called).
So the compiled code is kept in the user's cache directory under its source, as Python keeps a
module's .pyc: a process that generates the same source loads the code (marshal) instead of
compiling it. A cache file is used only when the source and name it holds are exactly those
asked for; a cache that cannot be read or written just means compiling, as before.
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
import types
import zlib

CACHE_ENV = "KAFKA_SHELL_CACHE_DIR"


def _directory() -> str:
    """$KAFKA_SHELL_CACHE_DIR, else $XDG_CACHE_HOME/kafka-shell (~/.cache/kafka-shell), one
    folder per Python (marshal's format is Python's own). os.path, not pathlib: a one-shot
    line imports nothing more for it."""
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "kafka-shell")
    return os.path.join(base, "compiled", sys.implementation.cache_tag or "python")


def compiled(source: str, name: str) -> types.CodeType:
    """`compile(source, name, "exec")`, loaded from the cache when compiled before."""
    key = (name + "\0" + source).encode()
    directory = _directory()
    path = os.path.join(directory, f"{zlib.crc32(key):08x}-{len(key)}")
    try:
        with open(path, "rb") as f:
            kept_name, kept_source, code = marshal.load(f)
        if kept_name == name and kept_source == source and isinstance(code, types.CodeType):
            return code
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = compile(source, name, "exec", dont_inherit=True)   # not this module's `from __future__`
    try:
        os.makedirs(directory, exist_ok=True)
        partial = f"{path}.{os.getpid()}.{threading.get_ident()}"
        with open(partial, "wb") as f:
            marshal.dump((name, source, code), f)
        os.replace(partial, path)   # whole or not at all, whoever else writes it at the same time
    except OSError:
        pass
    return code
