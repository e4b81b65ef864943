"""How create-topic lines are cut into CreateTopics requests: as few as Kafka's controller takes
whole (KRaft refuses a request over 10,000 partitions, or over 10,000 metadata records: a
TopicRecord, a PartitionRecord per partition and a ConfigRecord per config, for every topic)."""
from kafka_shell.admin.topics import NewTopic, _batches
from kafka_shell.base.limits import MAX_PARTITIONS_PER_BATCH, MAX_RECORDS_PER_USER_OP


def names(chunks: list[list[NewTopic]]) -> list[list[str]]:
    return [[t.name for t in chunk] for chunk in chunks]


def test_two_topics_of_5000_partitions_go_in_two_requests():
    # 5,000 + 5,000 partitions is within the partition limit, but with their two TopicRecords it
    # is 10,002 records: Kafka 4.4 refuses that request ("excessively large batch operation").
    chunks = _batches([NewTopic("a", 5000), NewTopic("b", 5000), NewTopic("c", 3)])
    assert names(chunks) == [["a"], ["b", "c"]]


def test_configs_count_as_records():
    big = NewTopic("a", MAX_RECORDS_PER_USER_OP - 3)               # 9,998 records
    tuned = NewTopic("b", 1, configs=(("retention.ms", "1"),))     # 3 records
    assert names(_batches([big, tuned])) == [["a"], ["b"]]
    assert names(_batches([big, NewTopic("b", 1)])) == [["a", "b"]]


def test_every_request_is_within_both_limits_and_names_each_topic_once():
    topics = [NewTopic(f"t{i % 700}", 1 + (i * 37) % 900, configs=(("k", "v"),) * (i % 3)) for i in range(2000)]
    chunks = _batches(topics)
    assert [t for chunk in chunks for t in chunk] == topics
    for chunk in chunks:
        assert sum(t.size for t in chunk) <= MAX_PARTITIONS_PER_BATCH
        assert sum(1 + t.size + len(t.configs) for t in chunk) <= MAX_RECORDS_PER_USER_OP
        assert len({t.name for t in chunk}) == len(chunk)


def test_many_small_topics_fill_a_request():
    chunks = _batches([NewTopic(f"t{i}", 1) for i in range(6000)])
    assert [len(c) for c in chunks] == [MAX_RECORDS_PER_USER_OP // 2, 1000]


def test_a_topic_over_a_limit_goes_alone_for_the_controller_to_answer():
    chunks = _batches([NewTopic("a", 1), NewTopic("huge", MAX_PARTITIONS_PER_BATCH + 1), NewTopic("b", 1)])
    assert names(chunks) == [["a"], ["huge"], ["b"]]
