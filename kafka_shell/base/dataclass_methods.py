"""Dataclass methods compiled when first called instead of when their class is made.

CPython 3.11 and 3.12 compile each generated method (__init__, __repr__, __eq__, __hash__, a
frozen class's __setattr__ and __delattr__) from source as the class is made: about 1 ms a
frozen class. A one-shot line makes 50 to 100 dataclasses (kio's message classes, the shell's
records), a fifth of its CPU, and calls few of those methods. `defer_compilation` makes
dataclasses compile each method on its first call (its code from the compile cache,
base/compiled.py, once a process has compiled it); the class then holds the compiled method, so
later calls cost what they always did. Only the shell's own process turns it on (face/launch.py).
Python 3.13 compiles a class's methods in one go and is left alone.

A dataclass without a docstring (all of kio's) also gets its signature as __doc__, which
dataclasses asks `inspect` for: 0.05 ms a class, and importing inspect (with ast, dis, tokenize)
costs ~7 ms more. Called before anything imports dataclasses, `defer_compilation` gives such a
class its name alone as __doc__, and inspect is imported only if something else needs it.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from kafka_shell.base.compiled import compiled


class _NoSignatures(types.ModuleType):
    """What dataclasses has as `inspect` in the shell's process: no signature for a docstring;
    anything else it may ask for (another Python's dataclasses), from the real inspect."""

    @staticmethod
    def signature(obj: object) -> Any:
        raise ValueError("class signatures are not worked out in the shell's process")

    def __getattr__(self, name: str) -> Any:
        import inspect   # the real one: this stand-in is in sys.modules only while dataclasses loads
        return getattr(inspect, name)


def defer_compilation() -> None:
    """From now on, dataclasses made in this process compile their methods on first use (and
    get no signature in their docstring)."""
    if "dataclasses" not in sys.modules and "inspect" not in sys.modules:
        sys.modules["inspect"] = _NoSignatures("inspect")   # what dataclasses imports as inspect
        try:
            import dataclasses
        finally:
            del sys.modules["inspect"]
    import dataclasses
    made_now = getattr(dataclasses, "_create_fn", None)
    if made_now is None or sys.version_info >= (3, 13) or getattr(made_now, "deferred", False):
        return

    def create_fn(name: str, args: Any, body: Any, *, globals: Any = None, locals: Any = None,
                  return_type: Any = dataclasses.MISSING) -> Any:
        made = None

        def method(*a: Any, **k: Any) -> Any:
            nonlocal made
            if made is None:
                made = _made(name, args, body, globals, locals, return_type, dataclasses.MISSING)
                made.__qualname__ = method.__qualname__
                # The class that holds this stand-in holds the method itself from now on (a
                # __repr__ stays wrapped by dataclasses' recursion guard: it keeps the stand-in).
                for klass in type(a[0]).__mro__ if a else ():
                    if klass.__dict__.get(name) is method:
                        setattr(klass, name, made)
                        break
            return made(*a, **k)

        method.__name__ = name
        return method

    create_fn.deferred = True  # type: ignore[attr-defined]
    dataclasses._create_fn = create_fn  # type: ignore[attr-defined]


def _made(name: str, args: Any, body: Any, globals: Any, locals: Any, return_type: Any, missing: Any) -> Any:
    """The method dataclasses' _create_fn (3.11, 3.12) makes from the same parts: the source of a
    function that takes the method's free names (`locals`) and returns it, whose code comes from
    the compile cache (base/compiled.py), as the generated protocol code does."""
    free = dict(locals or {})
    annotation = ""
    if return_type is not missing:
        free["_return_type"] = return_type
        annotation = "->_return_type"
    lines = "\n".join(f"  {line}" for line in body)
    source = (f"def __create_fn__({', '.join(free)}):\n"
              f" def {name}({','.join(args)}){annotation}:\n{lines}\n"
              f" return {name}")
    namespace: dict[str, Any] = {}
    exec(compiled(source, "<string>"), globals, namespace)
    return namespace["__create_fn__"](**free)
