"""What each sandbox listener lists in ApiVersions and serves: exactly what a listener of the same
kind lists on the Kafka release the sandbox follows (kafka_shell.protocol.definitions, taken from real
brokers and controllers), less what UNSERVED says the sandbox does not serve and why; plus, only
when asked (`seed_apis`), the APIs of the seeds that no Kafka release has.

UNSERVED is the one table of these differences: tests/sandbox/test_api_versions.py compares the
sandbox with real Kafka through it, and docs/sandbox.md lists it.
"""

from __future__ import annotations

from pathlib import Path

from dataclasses import dataclass
from functools import cache

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.protocol.definitions import BROKER, CONTROLLER, RELEASES, ZK_BROKER, releases
from kafka_shell.sandbox import handlers

ALL_LISTENERS = (BROKER, CONTROLLER, ZK_BROKER)


@dataclass(frozen=True)
class Unserved:
    """APIs (or some of their versions) a Kafka listener lists that the sandbox's does not."""
    keys: tuple[int, ...]
    reason: str
    versions: range | None = None                   # None: every version
    releases: tuple[str, ...] = RELEASES
    listeners: tuple[str, ...] = ALL_LISTENERS

    def covers(self, release: str, listener: str, key: int, version: int) -> bool:
        return (key in self.keys and release in self.releases and listener in self.listeners
                and (self.versions is None or version in self.versions))


UNSERVED: tuple[Unserved, ...] = (
)

# The seeds' APIs, in no Kafka release (KAFKA-20098): GetReplicaLogInfo and ElectLeaders v3
# (designated elections). Listed only by a sandbox started with `seed_apis`.
SEED_APIS: dict[int, range] = {ApiKey.GET_REPLICA_LOG_INFO: range(0, 1), ApiKey.ELECT_LEADERS: range(3, 4)}


def unserved(release: str, listener: str, key: int, version: int) -> Unserved | None:
    return next((u for u in UNSERVED if u.covers(release, listener, key, version)), None)


def _contiguous(versions: list[int]) -> range | None:
    if not versions:
        return None
    if versions != list(range(versions[0], versions[-1] + 1)):
        raise ValueError(f"versions {versions} are not contiguous: an UNSERVED row must take the lowest or highest")
    return range(versions[0], versions[-1] + 1)


@cache
def versions(release: str, listener: str, key: int, handled: range, seed_apis: bool) -> tuple[range | None, range | None]:
    """(listed, accepted) versions of one API on one listener, given the versions its handler
    serves: listed is what ApiVersions says, accepted what requests may use (Kafka 4.x lists
    Produce v0-v2 for old librdkafka's sake, KAFKA-18659, but closes the connection on them, as
    it does on any version it does not parse). (None, None): not served there."""
    r = releases.release(release)
    seed = SEED_APIS.get(key) if seed_apis else None
    if seed is not None and key not in r.api_names and listener != CONTROLLER:
        return seed, seed  # GetReplicaLogInfo: a broker RPC, each broker answers for its own replicas
    kafka_versions = r.apis.get(listener, {}).get(key, range(0))
    span = _contiguous([v for v in kafka_versions if v in handled and unserved(release, listener, key, v) is None])
    if span is None:
        return None, None
    valid = r.valid.get(key, span)
    accepted = range(max(span.start, valid.start), min(span.stop, valid.stop))
    if seed is not None and seed.start == span.stop and seed.stop <= handled.stop:
        span, accepted = range(span.start, seed.stop), range(accepted.start, seed.stop)  # ElectLeaders v3
    return span, accepted


def listed(release: str, listener: str, seed_apis: bool, served: dict[int, handlers.Api]) -> dict[int, range]:
    """What a listener's ApiVersions lists: api key -> versions."""
    out = {}
    for key, api in sorted(served.items()):
        span, _ = versions(release, listener, key, api.versions, seed_apis)
        if span is not None:
            out[key] = span
    return out


# -- docs/sandbox.md's tables --------------------------------------------------------------------

KINDS = [(release, listener) for release in RELEASES for listener in ALL_LISTENERS
         if listener in releases.release(release).apis]


def _span(r: range | None) -> str:
    return "" if r is None else f"{r.start}-{r.stop - 1}"


def markdown() -> str:
    """The served table and the UNSERVED table, as docs/sandbox.md shows them."""
    from kafka_shell.protocol import codec
    served = handlers.load()
    listings = {kind: listed(*kind, False, served) for kind in KINDS}
    head = " | ".join(f"{release} {listener.replace('_', ' ')}" for release, listener in KINDS)
    lines = [f"| Key | API | {head} |", "|----:|-----|" + "---|" * len(KINDS)]
    for key in sorted({k for listing in listings.values() for k in listing}):
        cells = " | ".join(_span(listings[kind].get(key)) for kind in KINDS)
        lines.append(f"| {key} | {codec.api_name(key)} | {cells} |")
    lines += ["", "| Keys | APIs | Versions | Where Kafka lists them | Why not |", "|---|---|---|---|---|"]
    for u in UNSERVED:
        names = ", ".join(next(releases.release(r).api_names[k] for r in RELEASES if k in releases.release(r).api_names)
                          for k in u.keys)
        versions = "all" if u.versions is None else _span(u.versions)
        covered = [kind for kind in KINDS if any(u.covers(*kind, k, v) for k in u.keys
                                                 for v in releases.release(kind[0]).apis[kind[1]].get(k, range(0)))]
        where = ", ".join(f"{r} {listener.replace('_', ' ')}" for r, listener in covered)
        lines.append(f"| {', '.join(map(str, u.keys))} | {names} | {versions} | {where} | {u.reason} |")
    return "\n".join(lines)


DOC_START, DOC_END = "<!-- api-tables -->\n", "\n<!-- /api-tables -->"
UNSERVED_INTRO = "What Kafka lists that the sandbox does not serve, and why:"


def doc_section() -> str:
    served, unserved = markdown().split("\n\n")
    if not UNSERVED:
        return f"{served}\n\nThe sandbox serves every API and version Kafka lists, in every release and listener above."
    return f"{served}\n\n{UNSERVED_INTRO}\n\n{unserved}"


def write_doc(path: Path) -> None:
    """Rewrite the tables between the api-tables markers of docs/sandbox.md."""
    text = path.read_text()
    head, rest = text.split(DOC_START)
    tail = rest.split(DOC_END)[1]
    path.write_text(f"{head}{DOC_START}{doc_section()}{DOC_END}{tail}")


if __name__ == "__main__":
    write_doc(Path(__file__).resolve().parents[2] / "docs" / "sandbox.md")
