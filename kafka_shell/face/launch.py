"""Where the shell's own process starts (the kafka-shell script, `python -m kafka_shell`): what
only a process of its own may change is set here, before the rest of the shell is imported."""

import sys


def main() -> int:
    # kio registers hypothesis strategies for its types whenever hypothesis is importable (it is,
    # in a venv with the test tools), which costs ~0.1 s of start-up the shell never needs.
    # Marking it absent makes kio skip it.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    # Before anything imports dataclasses (see the module).
    from kafka_shell.base.dataclass_methods import defer_compilation
    defer_compilation()
    # A command keeps most of what it allocates until it ends (a large answer, decoded): at the
    # default threshold (700) the collector walks those objects again and again, a tenth of a
    # 10,000-partition describe-group. Cycles are still collected, in larger steps.
    import gc
    gc.set_threshold(50_000)
    from kafka_shell.face.main import main as shell
    return shell()
