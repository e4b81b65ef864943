"""--data-dir: a sandbox keeps its topics and configs across runs."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kafka_shell.sandbox.server import Sandbox


def test_topics_and_configs_survive_a_restart(tmp_path):
    with Sandbox(brokers=3, data_dir=str(tmp_path)) as s:
        a = AdminClient({"bootstrap.servers": s.bootstrap})
        a.create_topics([NewTopic("kept", 4, 2, config={"retention.ms": "1000"})])["kept"].result(10)
        cluster_id = s.cluster.cluster_id
    with Sandbox(brokers=3, data_dir=str(tmp_path)) as s:
        a = AdminClient({"bootstrap.servers": s.bootstrap})
        md = a.list_topics(timeout=10)
        assert md.cluster_id == cluster_id
        assert len(md.topics["kept"].partitions) == 4
        res = ConfigResource(ConfigResource.Type.TOPIC, "kept")
        configs = a.describe_configs([res])[res].result(10)
        assert configs["retention.ms"].value == "1000"
