"""Kafka's protocol limits, one constant each, shared by the shell and the sandbox (owned by
neither): field widths, name lengths and how much one request may ask for."""

# Integer field widths: a value must fit the field it is sent in.
INT16_MAX, INT32_MAX, INT64_MAX = 2**15 - 1, 2**31 - 1, 2**63 - 1
# A protocol string (int16 length): group ids, principals, transactional ids...
MAX_STRING_BYTES = INT16_MAX
# Kafka's Topic.MAX_NAME_LENGTH.
MAX_TOPIC_NAME = 249
# socket.request.max.bytes' default: the largest frame a broker reads.
MAX_FRAME_BYTES = 100 * 1024 * 1024
# KRaft's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: a CreateTopics or CreatePartitions
# request adding more partitions than this in all is refused (POLICY_VIOLATION).
MAX_PARTITIONS_PER_BATCH = 10_000
# KRaft's QuorumController.MAX_RECORDS_PER_USER_OP: the metadata records one request may make
# (CreateTopics: a TopicRecord, a PartitionRecord per partition and a ConfigRecord per config,
# for every topic); more is refused ("Unable to perform excessively large batch operation").
MAX_RECORDS_PER_USER_OP = 10_000
# KAFKA-20098: the most partitions one ElectLeaders v3 or GetReplicaLogInfo request is served for.
MAX_PARTITIONS_PER_ELECTION = 1000
# DescribeTopicPartitions' default ResponsePartitionLimit: partitions per page.
PARTITIONS_PER_PAGE = 2000
