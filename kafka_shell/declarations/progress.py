"""One line of progress on a stream (stderr), for commands that wait."""

from __future__ import annotations

import time

from kafka_shell.declarations.render import human_bytes


class ProgressBar:
    """Redrawn in place on a terminal. Elsewhere, with `log_changes`, each change of the text
    becomes a line of its own (the suffix, an ETA say, does not count as a change); without it,
    nothing is written and the caller reports the end."""

    WIDTH = 20

    def __init__(self, stream, log_changes: bool = False) -> None:
        self.stream = stream
        self.log_changes = log_changes
        self.tty = _isatty(stream)
        self.last = ""
        self.drawn = False

    def show(self, fraction: float, text: str, suffix: str = "") -> None:
        line = f"[{'#' * int(min(max(fraction, 0.0), 1.0) * self.WIDTH):<{self.WIDTH}}] {text}"
        if self.tty:
            self.stream.write(f"\r{line}{suffix}   ")
        elif self.log_changes and line != self.last:
            self.stream.write(f"{line}{suffix}\n")
        else:
            return
        self.last = line
        self.drawn = True
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()


class CopyProgress:
    """The progress of partitions being moved (reassign-partitions --blocking, balance's runs):
    partitions done, bytes copied and an ETA from the copy rate seen."""

    def __init__(self, out) -> None:
        self.bar = ProgressBar(out, log_changes=True)
        self.start = time.monotonic()
        self.first: int | None = None

    def show(self, done: int, total: int, copied: int, size: int) -> None:
        self.first = copied if self.first is None else self.first
        elapsed = time.monotonic() - self.start
        speed = (copied - self.first) / elapsed if elapsed > 0 else 0
        eta = f"ETA {fmt_seconds((size - copied) / speed)}" if speed > 0 and size > copied else "ETA -"
        fraction = copied / size if size else done / total if total else 1.0
        self.bar.show(fraction, f"{done}/{total} partitions, {human_bytes(int(copied))}/{human_bytes(int(size))} copied",
                      f", {eta}")

    def done(self) -> None:
        self.bar.close()


def fmt_seconds(s: float) -> str:
    s = int(s + 0.5)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
