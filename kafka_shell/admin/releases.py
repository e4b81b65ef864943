"""Which Kafka release a cluster looks like, from the ApiVersions the connection manager holds,
so that a command the cluster cannot serve says so in one line: "share groups need Kafka 4.1 or
later; this cluster is 3.9".

The release is the one of Kafka's own definitions (kafka_shell/definitions) whose broker API
table agrees best with what the cluster lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.protocol import codec, definitions
from kafka_shell.protocol.definitions import releases
from kafka_shell.base.errors import NotSupported

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager


def closest_release(listed: dict[int, range]) -> str:
    """The release (e.g. "3.9") whose broker ApiVersions agree with `listed` on most APIs."""
    def agreement(name: str) -> int:
        tables = releases.release(name).apis
        return max(sum(1 for key, versions in table.items() if listed.get(key) == versions)
                   for kind, table in tables.items() if kind != definitions.CONTROLLER)
    return max(definitions.RELEASES, key=agreement)


def _older(release: str, than: str) -> bool:
    return tuple(map(int, release.split("."))) < tuple(map(int, than.split(".")))


def require(conn: ConnectionManager, api_key: int, what: str, since: str, version: int = 0) -> None:
    """Nothing when the cluster lists `api_key` (at least `version` of it); else NotSupported
    saying `what` needs Kafka `since` or later and which release the cluster is (or that it does
    not serve the API)."""
    listed = conn.api_versions()
    if listed.get(api_key) and listed[api_key].stop > version:
        return
    release = closest_release(listed)
    if _older(release, since):
        raise NotSupported(f"{what} need Kafka {since} or later; this cluster is {release}.")
    raise NotSupported(f"{what} are not served by this cluster: it does not list the {codec.api_name(api_key)} "
                       f"API (Kafka {since} and later have it).")
