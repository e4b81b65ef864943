"""Dataclass methods compiled on first call (kafka_shell/base/dataclass_methods.py, turned on by
the shell's own process) behave as the ones dataclasses compiles at once: checked in a process of
its own, since the switch is for the whole process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHECKS = textwrap.dedent("""
    import dataclasses, sys
    from kafka_shell.base.dataclass_methods import defer_compilation
    defer_compilation()
    defer_compilation()   # twice: no stand-in of a stand-in
    from dataclasses import dataclass, field

    @dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: list = field(default_factory=list)

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Slotted:
        a: int
        b: str = "b"

    @dataclass
    class Base:
        n: int

    @dataclass
    class Child(Base):
        m: int = 2

    class Plain(Base):   # no dataclass: its __init__ is Base's
        pass

    if sys.version_info < (3, 13):   # later Pythons compile a class's methods in one go: left alone
        assert Point.__init__.__code__.co_name == "method", "not deferred"
    p = Point(1)
    assert (p.x, p.y, p.tags) == (1, 0, [])
    assert repr(p) == "Point(x=1, y=0, tags=[])"
    assert p == Point(1) and p != Point(2) and Point(1).__eq__(1) is NotImplemented
    assert hash(Point(1, 2, ())) == hash(Point(1, 2, ()))
    try:
        p.x = 5
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a frozen instance took an assignment")
    try:
        del p.y
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a frozen instance lost a field")
    try:
        Point()
    except TypeError as exc:
        assert "Point.__init__() missing 1 required positional argument: 'x'" in str(exc), exc
    else:
        raise AssertionError("a required field went missing")
    assert dataclasses.replace(p, y=3) == Point(1, 3)
    s = Slotted(a=1)
    assert (s.a, s.b, repr(s)) == (1, "b", "Slotted(a=1, b='b')") and not hasattr(s, "__dict__")
    assert s == Slotted(a=1) and {s: 1}[Slotted(a=1)] == 1
    assert Child(1) == Child(1, 2) and repr(Child(1)) == "Child(n=1, m=2)"
    assert Plain(4).n == 4 and Base(4) == Base(4)
    # Once called, the class holds the compiled method itself.
    assert Point.__init__.__qualname__ == "Point.__init__" and "method" not in Point.__init__.__code__.co_name
    assert Slotted.__eq__.__code__.co_name == "__eq__"
    print("ok")
""")


def test_methods_compiled_on_first_call_behave_as_dataclasses_own() -> None:
    done = subprocess.run([sys.executable, "-c", CHECKS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


WITHOUT_INSPECT = textwrap.dedent("""
    import sys
    from kafka_shell.base.dataclass_methods import defer_compilation
    defer_compilation()   # before anything imports dataclasses, as the shell's process does
    from dataclasses import dataclass, fields

    @dataclass(frozen=True)
    class Undocumented:
        x: int

    assert Undocumented.__doc__ == "Undocumented", Undocumented.__doc__   # no signature worked out
    assert [f.name for f in fields(Undocumented)] == ["x"] and Undocumented(1).x == 1
    assert "inspect" not in sys.modules and "ast" not in sys.modules, "inspect was imported"
    import dataclasses
    assert dataclasses.inspect.isclass(Undocumented)   # anything else: the real inspect's
    import inspect   # the real one, for whoever needs it
    assert str(inspect.signature(Undocumented)) == "(x: int) -> None"
    print("ok")
""")


def test_the_shells_process_makes_dataclasses_without_importing_inspect() -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_INSPECT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
