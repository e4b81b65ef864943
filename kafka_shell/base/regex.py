"""Regular expressions written for Kafka (Java's or RE2J's syntax: transactional-id patterns,
subscription regexes, client-metrics matches), read with Python's re, which shares the common
subset."""

from __future__ import annotations

import re
import warnings


def compile_kafka_regex(text: str) -> re.Pattern[str]:
    """The pattern; ValueError saying why when Python's re cannot read it. Python's
    FutureWarnings about how it may read nested sets one day ("[[a]", "a--b") are not the
    user's concern: Java reads those its own way today."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(text)
        except re.error as exc:
            raise ValueError(str(exc)) from None
        except (RecursionError, OverflowError):
            raise ValueError("nested too deeply") from None
