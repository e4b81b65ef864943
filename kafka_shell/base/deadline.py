"""One bound on an operation, retries included: `Deadline`; and one bound on a whole command:
`Budget`, what is left of its --timeout, which caps every Deadline made within it.

Every wait of the shell (a request, its retries, the backoff between them, a poll until the
cluster shows a change) takes what is left of one deadline, so no operation outlasts the
`--timeout` it was given (plus the broker's own operation timeout, where a request carries one),
however many retries it makes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

INITIAL_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0
LAST_TRY_S = 0.001   # what `left` gives at the end: enough for a last non-blocking look
LAST_ASK_S = 0.5     # what a request gets once its command's --timeout is spent (Budget.cap)


class Deadline:
    """`seconds` (plus `extra_s`, a broker's own operation timeout) from now; `backoff()` sleeps
    the next exponential backoff when another try still fits; `silent` names the last peer that
    did not answer, for the message said when time runs out."""

    def __init__(self, seconds: float, extra_s: float = 0.0):
        self.seconds = seconds
        self.started = time.monotonic()
        self.at = self.started + seconds + max(extra_s, 0.0)
        self.silent: str | None = None
        self._backoff = INITIAL_BACKOFF_S

    def left(self) -> float:
        return max(self.at - time.monotonic(), LAST_TRY_S)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def can_retry(self) -> bool:
        """Whether a try after the next backoff would still start before the deadline."""
        return time.monotonic() + self._backoff < self.at

    def backoff(self) -> bool:
        """Sleep the next backoff (50 ms doubling up to 1 s) and return True, or return False at
        once when a try after it would start past the deadline."""
        if not self.can_retry():
            return False
        time.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
        return True

    def pause(self, seconds: float) -> bool:
        """Sleep `seconds` (a poll interval), cut short at the deadline; False when it has passed."""
        if self.expired:
            return False
        time.sleep(min(seconds, self.at - time.monotonic()) if seconds > 0 else 0)
        return not self.expired

    def within(self, seconds: float) -> Deadline:
        """A shorter deadline inside this one (a connection attempt, a probe)."""
        inner = Deadline(min(seconds, self.left()))
        inner.seconds = self.seconds
        return inner


class Budget:
    """What is left of the running command's --timeout: each request's wait is the smaller of
    it and the request's own bound (`cap`), so a command ends within --timeout however many
    requests it makes and whatever a broker does. Outside a command (`of`), nothing is capped."""

    def __init__(self) -> None:
        self.deadline: Deadline | None = None
        self.silent: set[int] = set()   # the nodes that did not answer in time in this command

    @contextlib.contextmanager
    def of(self, seconds: float | None) -> Iterator[None]:
        """Every wait in the block ends within `seconds` from now (None: a wait of the command's
        own making, such as --blocking until a reassignment ends, bounded by each request's own)."""
        old, self.deadline = self.deadline, Deadline(seconds) if seconds is not None else None
        old_silent, self.silent = self.silent, set()
        try:
            yield
        finally:
            self.deadline, self.silent = old, old_silent

    def gave_up_on(self, node: int) -> bool:
        """The node did not answer earlier in this command and the command's time is spent: asking
        it again would only add LAST_ASK_S for nothing, once per request."""
        return node in self.silent and self.deadline is not None and self.deadline.expired

    def cap(self, deadline: Deadline) -> Deadline:
        """`deadline`, ending no later than the command's (its `seconds`, which messages say,
        stay the --timeout the command was given). Once the command's time is spent (waiting for
        a broker that did not answer), a request still gets LAST_ASK_S: a broker that answers at
        once is not blamed for the time another one took."""
        if self.deadline is not None:
            deadline.at = min(deadline.at, max(self.deadline.at, time.monotonic() + LAST_ASK_S))
        return deadline
