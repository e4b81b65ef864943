"""Topic patterns and describe-configs of every broker on real Kafka 4.4, beside Kafka's own
kafka-topics and kafka-configs (from the cached jars): a regular expression selects the topics
kafka-topics --list --topic selects, and --entity-type brokers alone describes the brokers
kafka-configs describes."""

from __future__ import annotations

import re
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from tests.clients import java_client
from tests.output import json_rows
from tests.test_oneshot import shell


def test_regular_expressions_select_what_kafka_topics_selects(kafka4):
    base = f"pat{uuid.uuid4().hex[:6]}"
    names = [base, f"{base}-eu", f"{base}-us", f"{base}X", f"{base}-logs-1"]
    admin = AdminClient({"bootstrap.servers": kafka4.bootstrap, "log_level": 0})
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(60)
    for pattern in (f"{base}-.*", f"{base}-*", f"{base}.*", f"{base}-(eu|us)", f"{base},{base}X", f"{base}-[eu]+",
                    f"{base}-logs-\\d"):
        kafka = java_client.run("TopicCommand", "--bootstrap-server", kafka4.bootstrap, "--list", "--topic", pattern)
        assert kafka.returncode == 0, kafka.stderr
        p = shell("--bootstrap-server", kafka4.bootstrap, "-o", "json", "--command", f"list-topics '{pattern}'")
        assert p.returncode == 0, p.stderr
        assert [r["topic"] for r in json_rows(p.stdout)] == sorted(kafka.stdout.split()), pattern


def test_every_brokers_configs_as_kafka_configs_describes_them(kafka4):
    kafka = java_client.run("ConfigCommand", "--bootstrap-server", kafka4.bootstrap, "--describe",
                            "--entity-type", "brokers", "--all")
    assert kafka.returncode == 0, kafka.stderr
    described = sorted({int(b) for b in re.findall(r"All configs for broker (\d+) are:", kafka.stdout)})
    p = shell("--bootstrap-server", kafka4.bootstrap, "-o", "json", "--command", "describe-configs --entity-type brokers --all")
    assert p.returncode == 0, p.stderr
    rows = json_rows(p.stdout)
    assert sorted({r["broker"] for r in rows}) == described == [1, 2, 3]
    ours = {(r["name"], r["value"]) for r in rows if r["broker"] == 2 and not r["sensitive"]}
    theirs = set(re.findall(r"^  (\S+)=(\S*) sensitive=false", kafka.stdout.split("All configs for broker 2 are:")[1]
                            .split("All configs for broker")[0], re.M))
    assert {k for k, _ in theirs} <= {k for k, _ in ours} and ("broker.rack", "b") in ours
