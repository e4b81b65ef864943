"""Message types that no Kafka release has, declared in kio's style so kio's codec handles them.

From KAFKA-20098 (../shared/seeds/003_e2c330d9e380ca09.txt):
- ElectLeaders v3: each TopicPartitions entry gains DesignatedLeaders ([]int32, matched to
  Partitions by index), and ElectionType 2 = designated.
- GetReplicaLogInfo v0 (flexible): per replica, the leader epoch and log end offset it holds.
  The proposal leaves the API key open ("XX"); we use GET_REPLICA_LOG_INFO_KEY, far above the
  keys Apache Kafka has assigned (0..92 today), so it cannot collide with a future Kafka API.
"""

from typing import Any

from kafka_shell.protocol.codes import ApiKey

# The sandbox's control API (fault injection from another process, kafka_shell/sandbox/control.py
# serves it, kafka_shell/connection/sandbox_client.py calls it): far above Kafka's keys and GetReplicaLogInfo's.
SANDBOX_CONTROL_KEY = 1999
SANDBOX_CONTROL_VERSION = 0
ELECT_LEADERS_KEY: int = ApiKey.ELECT_LEADERS
GET_REPLICA_LOG_INFO_KEY: int = ApiKey.GET_REPLICA_LOG_INFO
DESIGNATED_ELECTION = 2  # ElectionType: 0 preferred, 1 unclean, 2 designated (v3+)


# The (api key, version) of each message type declared here; their classes (in
# protocol_ext_schemas) are imported on first use.
VERSIONS = frozenset({(ELECT_LEADERS_KEY, 3), (GET_REPLICA_LOG_INFO_KEY, 0)})
NAMES = {GET_REPLICA_LOG_INFO_KEY: "GetReplicaLogInfo"}


def request_class(api_key: int, version: int) -> Any:
    """The request class declared here for this key and version, or None."""
    if (api_key, version) not in VERSIONS:
        return None
    from kafka_shell.protocol.seed_api_schemas import REQUESTS
    return REQUESTS[(api_key, version)]


def response_class(api_key: int, version: int) -> Any:
    if (api_key, version) not in VERSIONS:
        return None
    from kafka_shell.protocol.seed_api_schemas import RESPONSES
    return RESPONSES[(api_key, version)]
