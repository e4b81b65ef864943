"""Fuzzy matching for REPL completion, ranked like pgcli's: names that start with the typed text
first (in order), then names that hold its characters in order (`desc-top` -> describe-topic,
`retms` -> retention.ms, `799` -> svc-799-events), the most compact and earliest match first.

A keystroke must stay under 20 ms with 1,000,000 topics cached, so `FuzzyIndex` (built once per
metadata snapshot, off the keystroke path) finds prefix matches by bisection and the others with
one regular expression over the names joined by newlines, in C, block by block: a block of
names lacking one of the typed characters is skipped without a look, and the scan stops at a
time budget (the menu then holds the matches found so far, prefix matches always first); only
the first few hundred matches are ranked in Python.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate

# Fuzzy matches ranked per keystroke at most: beyond this the menu is long anyway.
MAX_RANKED = 600
# Names a block of the index holds (each block knows which characters its names use).
BLOCK = 4096
# The fuzzy scan's share of a keystroke; the rest is ranking and the menu.
SCAN_BUDGET_S = 0.010


def starting_with(items: Sequence[str], prefix: str, limit: int) -> Iterator[str]:
    """The items of a sorted sequence that start with `prefix`, found by bisection."""
    i = bisect_left(items, prefix)
    end = min(len(items), i + limit)
    while i < end and items[i].startswith(prefix):
        yield items[i]
        i += 1


def _subsequence(typed: str) -> re.Pattern[str]:
    """The characters of `typed` in order within one line. Possessive skips of the characters
    that are not the next one keep it linear, and the literal first character lets the regex
    engine jump from candidate to candidate."""
    return re.compile(re.escape(typed[0]) + "".join(f"[^{re.escape(c)}\n]*+{re.escape(c)}" for c in typed[1:]))


def _scorer(typed: str) -> re.Pattern[str]:
    """Every match of `typed` in a name, shortest first from each start (a lookahead, so
    matches may overlap)."""
    return re.compile(f"(?=({'.*?'.join(map(re.escape, typed))}))", re.I)


def _score(scorer: re.Pattern[str], name: str) -> tuple[int, int]:
    """(length, start) of the most compact, then earliest, match in `name`."""
    return min(((len(m.group(1)), m.start()) for m in scorer.finditer(name)), default=(len(name), len(name)))


class FuzzyIndex:
    """Sorted names, their lower-cased text one name a line for the regular expression, where
    each name starts in it, and per block of BLOCK names the characters they use."""

    def __init__(self, names: Iterable[str]):
        self.names = sorted(names)
        self.text = "\n".join(self.names).lower()
        self.starts = list(accumulate((len(n) + 1 for n in self.names[:-1]), initial=0))
        self.blocks = [(self.starts[i], frozenset(self.text[self.starts[i]:self._end(i + BLOCK)]))
                       for i in range(0, len(self.names), BLOCK)]

    def _end(self, line: int) -> int:
        """Where the text of the names before `line` ends."""
        return self.starts[line] if line < len(self.names) else len(self.text)

    def matches(self, typed: str, limit: int) -> list[str]:
        """Up to `limit` names matching `typed`: prefix matches, then fuzzy ones, ranked."""
        found = list(starting_with(self.names, typed, limit))
        if not typed or len(found) >= limit:
            return found
        prefixed = set(found)
        lowered = typed.lower()
        pattern = _subsequence(lowered)
        needed = set(lowered)
        others: list[str] = []
        stop = time.perf_counter() + SCAN_BUDGET_S
        for b, (start, chars) in enumerate(self.blocks):
            if len(others) >= MAX_RANKED or time.perf_counter() > stop:
                break
            if not needed <= chars:   # a name of the block lacks a typed character: none matches
                continue
            end = self.blocks[b + 1][0] if b + 1 < len(self.blocks) else len(self.text)
            position = start
            while len(others) < MAX_RANKED:
                m = pattern.search(self.text, position, end)
                if m is None:
                    break
                line = bisect_right(self.starts, m.start()) - 1
                name = self.names[line]
                if name not in prefixed:
                    others.append(name)
                position = self.starts[line] + len(name) + 1   # one match a line is enough
        scorer = _scorer(typed)
        others.sort(key=lambda name: (*_score(scorer, name), name))
        return found + others[:limit - len(found)]


def fuzzy_matches(names: Sequence[str], typed: str, limit: int) -> list[str]:
    """Up to `limit` of the sorted `names` (a short list) matching `typed`."""
    return FuzzyIndex(names).matches(typed, limit)
