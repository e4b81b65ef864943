"""One line of progress on a stream (stderr), for commands that wait."""

from __future__ import annotations


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


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
