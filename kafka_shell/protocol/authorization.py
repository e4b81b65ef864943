"""What Kafka requires of each request, and the one way a refusal becomes a line.

`API_NEEDS` is read by the sandbox's authorizer (what it checks) and by the shell's messages
(what was refused); `authorization_message` is the one place an authorization failure becomes a
line naming the operation and resource that were refused ("not authorized: DESCRIBE on CLUSTER
is needed for reassignments"). Shared by the shell and the sandbox, owned by neither.
"""

from __future__ import annotations

from kafka_shell.protocol.codes import AclOperation as Op
from kafka_shell.protocol.codes import AclResourceType as Res
from kafka_shell.protocol.codes import ApiKey, Error

CLUSTER_NAME = "kafka-cluster"

# What each API checks, by resource type (Kafka's KafkaApis / ControllerApis). APIs absent here
# check nothing (ApiVersions, SASL, DescribeCluster).
API_NEEDS: dict[int, dict[Res, Op]] = {
    ApiKey.PRODUCE: {Res.TOPIC: Op.WRITE, Res.TRANSACTIONAL_ID: Op.WRITE},
    ApiKey.FETCH: {Res.TOPIC: Op.READ},
    ApiKey.LIST_OFFSETS: {Res.TOPIC: Op.DESCRIBE},
    ApiKey.METADATA: {Res.TOPIC: Op.DESCRIBE},        # + CREATE (CLUSTER or TOPIC) to auto-create
    ApiKey.OFFSET_COMMIT: {Res.GROUP: Op.READ, Res.TOPIC: Op.READ},
    ApiKey.OFFSET_FETCH: {Res.GROUP: Op.DESCRIBE, Res.TOPIC: Op.DESCRIBE},
    ApiKey.FIND_COORDINATOR: {Res.GROUP: Op.DESCRIBE, Res.TRANSACTIONAL_ID: Op.DESCRIBE},
    ApiKey.JOIN_GROUP: {Res.GROUP: Op.READ},
    ApiKey.HEARTBEAT: {Res.GROUP: Op.READ},
    ApiKey.LEAVE_GROUP: {Res.GROUP: Op.READ},
    ApiKey.SYNC_GROUP: {Res.GROUP: Op.READ},
    ApiKey.DESCRIBE_GROUPS: {Res.GROUP: Op.DESCRIBE},
    ApiKey.LIST_GROUPS: {Res.CLUSTER: Op.DESCRIBE, Res.GROUP: Op.DESCRIBE},  # CLUSTER, else per group
    ApiKey.DELETE_GROUPS: {Res.GROUP: Op.DELETE},
    ApiKey.OFFSET_DELETE: {Res.GROUP: Op.DELETE, Res.TOPIC: Op.READ},
    ApiKey.CREATE_TOPICS: {Res.CLUSTER: Op.CREATE, Res.TOPIC: Op.CREATE},    # CLUSTER, else per topic
    ApiKey.DELETE_TOPICS: {Res.CLUSTER: Op.DELETE, Res.TOPIC: Op.DELETE},    # CLUSTER, else per topic
    ApiKey.CREATE_PARTITIONS: {Res.TOPIC: Op.ALTER},
    ApiKey.DELETE_RECORDS: {Res.TOPIC: Op.DELETE},
    ApiKey.OFFSET_FOR_LEADER_EPOCH: {Res.TOPIC: Op.DESCRIBE},
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: {Res.TOPIC: Op.DESCRIBE},
    ApiKey.DESCRIBE_CONFIGS: {Res.TOPIC: Op.DESCRIBE_CONFIGS, Res.CLUSTER: Op.DESCRIBE_CONFIGS,
                              Res.GROUP: Op.DESCRIBE_CONFIGS},
    ApiKey.ALTER_CONFIGS: {Res.TOPIC: Op.ALTER_CONFIGS, Res.CLUSTER: Op.ALTER_CONFIGS},
    ApiKey.INCREMENTAL_ALTER_CONFIGS: {Res.TOPIC: Op.ALTER_CONFIGS, Res.CLUSTER: Op.ALTER_CONFIGS,
                                       Res.GROUP: Op.ALTER_CONFIGS},
    ApiKey.CONSUMER_GROUP_HEARTBEAT: {Res.GROUP: Op.READ, Res.TOPIC: Op.DESCRIBE},
    ApiKey.CONSUMER_GROUP_DESCRIBE: {Res.GROUP: Op.DESCRIBE, Res.TOPIC: Op.DESCRIBE},
    # Share groups (KafkaApis, 4.4); the share coordinator's state RPCs are brokers' own.
    ApiKey.SHARE_GROUP_HEARTBEAT: {Res.GROUP: Op.READ, Res.TOPIC: Op.DESCRIBE},
    ApiKey.SHARE_GROUP_DESCRIBE: {Res.GROUP: Op.DESCRIBE, Res.TOPIC: Op.DESCRIBE},
    ApiKey.SHARE_FETCH: {Res.GROUP: Op.READ, Res.TOPIC: Op.READ},
    ApiKey.SHARE_ACKNOWLEDGE: {Res.GROUP: Op.READ, Res.TOPIC: Op.READ},
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: {Res.CLUSTER: Op.CLUSTER_ACTION},
    ApiKey.READ_SHARE_GROUP_STATE: {Res.CLUSTER: Op.CLUSTER_ACTION},
    ApiKey.WRITE_SHARE_GROUP_STATE: {Res.CLUSTER: Op.CLUSTER_ACTION},
    ApiKey.DELETE_SHARE_GROUP_STATE: {Res.CLUSTER: Op.CLUSTER_ACTION},
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: {Res.CLUSTER: Op.CLUSTER_ACTION},
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: {Res.GROUP: Op.DESCRIBE, Res.TOPIC: Op.DESCRIBE},
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: {Res.GROUP: Op.READ, Res.TOPIC: Op.READ},
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: {Res.GROUP: Op.DELETE, Res.TOPIC: Op.READ},
    ApiKey.STREAMS_GROUP_HEARTBEAT: {Res.GROUP: Op.READ, Res.TOPIC: Op.DESCRIBE},
    ApiKey.STREAMS_GROUP_DESCRIBE: {Res.GROUP: Op.DESCRIBE, Res.TOPIC: Op.DESCRIBE},
    ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: {Res.GROUP: Op.READ},
    ApiKey.DESCRIBE_LOG_DIRS: {Res.CLUSTER: Op.DESCRIBE},
    ApiKey.ALTER_REPLICA_LOG_DIRS: {Res.CLUSTER: Op.ALTER},
    ApiKey.ELECT_LEADERS: {Res.CLUSTER: Op.ALTER},
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: {Res.CLUSTER: Op.ALTER},
    ApiKey.LIST_PARTITION_REASSIGNMENTS: {Res.CLUSTER: Op.DESCRIBE},
    ApiKey.DESCRIBE_QUORUM: {Res.CLUSTER: Op.DESCRIBE},
    ApiKey.UPDATE_FEATURES: {Res.CLUSTER: Op.ALTER},
    ApiKey.UNREGISTER_BROKER: {Res.CLUSTER: Op.ALTER},
    ApiKey.GET_REPLICA_LOG_INFO: {Res.CLUSTER: Op.DESCRIBE},
    ApiKey.DESCRIBE_ACLS: {Res.CLUSTER: Op.DESCRIBE},
    ApiKey.CREATE_ACLS: {Res.CLUSTER: Op.ALTER},
    ApiKey.DELETE_ACLS: {Res.CLUSTER: Op.ALTER},
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: {Res.CLUSTER: Op.DESCRIBE},
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: {Res.CLUSTER: Op.ALTER},
    ApiKey.DESCRIBE_CLIENT_QUOTAS: {Res.CLUSTER: Op.DESCRIBE_CONFIGS},
    # Transactions (KafkaApis): an idempotent producer needs IDEMPOTENT_WRITE on the cluster (or
    # WRITE on some topic); AddPartitionsToTxn v4+ and WriteTxnMarkers are brokers' (CLUSTER_ACTION).
    ApiKey.INIT_PRODUCER_ID: {Res.TRANSACTIONAL_ID: Op.WRITE, Res.CLUSTER: Op.IDEMPOTENT_WRITE},
    ApiKey.ADD_PARTITIONS_TO_TXN: {Res.TRANSACTIONAL_ID: Op.WRITE, Res.TOPIC: Op.WRITE, Res.CLUSTER: Op.CLUSTER_ACTION},
    ApiKey.ADD_OFFSETS_TO_TXN: {Res.TRANSACTIONAL_ID: Op.WRITE, Res.GROUP: Op.READ},
    ApiKey.END_TXN: {Res.TRANSACTIONAL_ID: Op.WRITE},
    ApiKey.WRITE_TXN_MARKERS: {Res.CLUSTER: Op.CLUSTER_ACTION},
    ApiKey.TXN_OFFSET_COMMIT: {Res.TRANSACTIONAL_ID: Op.WRITE, Res.GROUP: Op.READ, Res.TOPIC: Op.READ},
    ApiKey.DESCRIBE_PRODUCERS: {Res.TOPIC: Op.READ},
    ApiKey.DESCRIBE_TRANSACTIONS: {Res.TRANSACTIONAL_ID: Op.DESCRIBE, Res.TOPIC: Op.DESCRIBE},
    ApiKey.LIST_TRANSACTIONS: {Res.TRANSACTIONAL_ID: Op.DESCRIBE},
    ApiKey.ALTER_CLIENT_QUOTAS: {Res.CLUSTER: Op.ALTER_CONFIGS},
    ApiKey.LIST_CONFIG_RESOURCES: {Res.CLUSTER: Op.DESCRIBE_CONFIGS},
    ApiKey.ADD_RAFT_VOTER: {Res.CLUSTER: Op.ALTER},
    ApiKey.REMOVE_RAFT_VOTER: {Res.CLUSTER: Op.ALTER},
}

# The operations each resource type has (Kafka's AclEntry.supportedOperations): what ACLs may
# name (besides ALL) and what the "authorized operations" bit fields of responses cover.
SUPPORTED_OPERATIONS: dict[Res, tuple[Op, ...]] = {
    Res.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS,
                Op.ALTER_CONFIGS),
    Res.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    Res.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE,
                  Op.ALTER, Op.DESCRIBE),
    Res.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    Res.DELEGATION_TOKEN: (Op.DESCRIBE,),
    Res.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}


OPERATIONS_NOT_REQUESTED = -2**31   # an authorized-operations field the request did not ask for


def unsupported_operation(resource_type: Res, operations: list[Op]) -> str | None:
    """kafka-acls' refusal of an operation a resource type does not have, or None."""
    valid = (*SUPPORTED_OPERATIONS.get(resource_type, ()), Op.ALL, Op.ANY)
    if all(op in valid for op in operations):
        return None
    names = ", ".join(op.name for op in (*SUPPORTED_OPERATIONS.get(resource_type, ()), Op.ALL))
    return f"ResourceType {resource_type.name} only supports operations {names}"


# The resource type an authorization error code is about.
DENIED_RESOURCE = {
    Error.topic_authorization_failed: Res.TOPIC,
    Error.group_authorization_failed: Res.GROUP,
    Error.cluster_authorization_failed: Res.CLUSTER,
    Error.transactional_id_authorization_failed: Res.TRANSACTIONAL_ID,
}


# What a refused request was for, in the messages (cluster-wide refusals say it).
API_PURPOSE: dict[int, str] = {
    ApiKey.LIST_PARTITION_REASSIGNMENTS: "for reassignments",
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: "to reassign partitions",
    ApiKey.DESCRIBE_LOG_DIRS: "to describe log dirs",
    ApiKey.ELECT_LEADERS: "to elect leaders",
    ApiKey.DESCRIBE_QUORUM: "to describe the metadata quorum",
    ApiKey.UPDATE_FEATURES: "to change features",
    ApiKey.UNREGISTER_BROKER: "to unregister brokers",
    ApiKey.GET_REPLICA_LOG_INFO: "to read replica log ends",
    ApiKey.DESCRIBE_CONFIGS: "to describe configs",
    ApiKey.ALTER_CONFIGS: "to alter configs",
    ApiKey.INCREMENTAL_ALTER_CONFIGS: "to alter configs",
    ApiKey.DESCRIBE_ACLS: "to list ACLs",
    ApiKey.CREATE_ACLS: "to create ACLs",
    ApiKey.DELETE_ACLS: "to delete ACLs",
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: "to list SCRAM users",
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: "to change SCRAM users",
    ApiKey.DESCRIBE_CLIENT_QUOTAS: "to read quotas",
    ApiKey.ALTER_CLIENT_QUOTAS: "to change quotas",
    ApiKey.DESCRIBE_CLUSTER: "to describe the controllers",
}

def is_authorization_error(code: int | None) -> bool:
    return code in DENIED_RESOURCE


def authorization_message(api_key: int, code: int, name: str | None = None, purpose: str | None = None) -> str:
    """The line for an authorization error `code` answered to `api_key`: which operation on
    which resource the cluster refused, e.g. 'not authorized: DESCRIBE on CLUSTER is needed
    for reassignments'. `name`: the topic, group or transactional id; `purpose`: what for
    (default: API_PURPOSE's words for the request)."""
    if purpose is None:
        purpose = API_PURPOSE.get(api_key, "")
    resource = DENIED_RESOURCE[code]  # type: ignore[index]
    op = API_NEEDS.get(api_key, {}).get(resource)
    label = "CLUSTER" if resource == Res.CLUSTER else \
        f'{resource.name} "{name}"' if name is not None else resource.name
    what = f"{op.name} on {label}" if op is not None else f"access to {label}"
    return f"not authorized: {what} is needed" + (f" {purpose}" if purpose else "")
