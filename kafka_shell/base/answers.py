"""One shape of partial failure, for every admin call that asks more than one target: `Answers`,
the rows of those that answered beside an `AdminError` for each thing asked that has no row.

An AdminError is a value a caller can act on (its Kafka error code, whom it concerns), not a
sentence: the lines people read are made above the admin layer, in one place
(kafka_shell/declarations/failure_lines.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from kafka_shell.base.errors import printable

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

# Why a target was asked (the route that chose it).
LEADER = "leader"             # of the partitions asked (ListOffsets, DeleteRecords, DescribeProducers...)
REPLICA = "replica"           # a named broker, for its own replicas of the partitions asked
COORDINATOR = "coordinator"   # of the groups asked
TRANSACTION_COORDINATOR = "transaction coordinator"   # of the transactional ids asked
BROKER = "broker"             # each broker, for what it holds (ListGroups, DescribeLogDirs...)
CONTROLLER = "controller"


class Target(NamedTuple):
    """Whom an error concerns: its `role`, its broker id (-1 when none was found: a partition
    without a leader, a group without a coordinator) and what it was asked about."""
    role: str
    broker: int = -1
    asked: tuple = ()


@dataclass(frozen=True)
class AdminError:
    """Why something asked has no answer: Kafka's error `code` (None when the target did not
    answer, or could not be reached) and `message`, Kafka's own text or how the target failed
    ("did not answer ListOffsets within 3 s"). One error may cover many things asked (every
    partition of a leader that did not answer): it is the same value for each."""
    code: int | None
    target: Target
    message: str = ""

    @property
    def answered(self) -> bool:
        """The target answered (with an error code); False: it did not answer, or was not reached."""
        return self.code is not None

    def __str__(self) -> str:
        """The fact, naming the target and what it was asked about: "Broker 1 (leader of
        keyed-0) did not answer ListOffsets within 3 s" (advice is added above the admin layer)."""
        t = self.target
        if t.role in (LEADER, REPLICA):
            who = f"Broker {t.broker} ({t.role} of {listed(f'{k[0]}-{k[1]}' for k in t.asked)})"
        elif t.role in (COORDINATOR, TRANSACTION_COORDINATOR):
            noun = "group" if t.role == COORDINATOR else "transactional id"
            names = listed(f"'{printable(str(g))}'" for g in t.asked)
            who = f"The {t.role} of {noun}{'s' if len(t.asked) > 1 else ''} {names} (broker {t.broker})"
        elif t.role == CONTROLLER:
            who = "The controller"
        else:
            who = f"Broker {t.broker}"
        what = self.message or (f"answered error {self.code}" if self.code is not None else "did not answer")
        return f"{who} {what}"


@dataclass(frozen=True)
class Answers(Generic[K, T]):
    """What was asked, by key: the rows answered, and an AdminError for each key without one."""
    rows: dict[K, T] = field(default_factory=dict)
    errors: dict[K, AdminError] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.errors

    def whole(self) -> AdminError | None:
        """The one error of a request refused (or unanswered) as a whole: every key has it and
        none has a row; else None."""
        distinct = {id(e): e for e in self.errors.values()}
        return next(iter(distinct.values())) if len(distinct) == 1 and not self.rows else None

    def unanswered(self) -> list[AdminError]:
        """Each target that did not answer (or was not reached), once, in the order met."""
        return list({id(e): e for e in self.errors.values() if e.code is None}.values())


SHOWN = 3   # things named in a line before "and N more"


def listed(items: Iterable[object], limit: int = SHOWN) -> str:
    """`a, b, c and 7 more`; `a and b`."""
    names = [str(i) for i in items]
    if len(names) > limit:
        return ", ".join(names[:limit]) + f" and {len(names) - limit} more"
    return " and ".join(filter(None, [", ".join(names[:-1]), names[-1] if names else ""]))
