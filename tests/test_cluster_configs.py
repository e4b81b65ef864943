"""Configs across the cluster (issue 33 item 5) on the sandbox: export-configs writes every
entity's dynamic configs to JSON with sensitive values left out (their keys listed), import-configs
shows the changes that make the cluster match a file (validated by the cluster) and applies them
only with --execute, diff-configs shows drift among brokers with each value's source. The same on
real Kafka 4.4 in tests/real/test_fleet_real.py."""

from __future__ import annotations

import json

import pytest

from tests.output import json_rows
from tests.test_groups_cmd import ok, sh
from tests.test_oneshot import assert_one_line_error, run

SECRET = "s3cret-value"


@pytest.fixture
def configured(sandbox):
    """Overrides of every kind: broker defaults, broker 2's own (and a sensitive one on broker 1),
    two topics' overrides, a group's config, a client quota."""
    for line in ("create-topic --topic orders --partitions 2 --config retention.ms=86400000 --config cleanup.policy=compact",
                 "create-topic --topic pay", "create-topic --topic plain",
                 "alter-configs --topic pay --add-config max.message.bytes=2000000",
                 "alter-configs --entity-default --add-config log.retention.ms=7200000",
                 "alter-configs --broker 2 --add-config log.cleaner.threads=2",
                 f"alter-configs --broker 1 --add-config listener.name.plaintext.ssl.key.password={SECRET}",
                 "alter-configs --entity-type groups --entity-name app --add-config consumer.session.timeout.ms=60000",
                 "alter-client-quotas --entity-type users --entity-name alice --add-config producer_byte_rate=1024",
                 "alter-client-quotas --entity-default clients --add-config consumer_byte_rate=2048"):
        ok(sandbox, line)
    return sandbox


def export(sandbox, path) -> dict:
    p = run(sandbox, f"export-configs {path}", "-o", "json")
    assert p.returncode == 0, p.stderr
    assert SECRET not in path.read_text() and SECRET not in p.stdout + p.stderr
    return json.loads(path.read_text())


def test_export_writes_every_entity_and_never_a_secret(configured, tmp_path):
    path = tmp_path / "configs.json"
    p = run(configured, f"export-configs {path}", "-o", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(path.read_text())
    assert (doc["format"], doc["version"]) == ("kafka-shell configs", 1)
    assert doc["broker_defaults"]["log.retention.ms"] == "7200000"
    assert doc["brokers"] == {"1": {}, "2": {"log.cleaner.threads": "2"}, "3": {}}
    assert doc["topics"] == {"orders": {"cleanup.policy": "compact", "retention.ms": "86400000"},
                             "pay": {"max.message.bytes": "2000000"}}   # plain has none: left out
    assert doc["groups"] == {"app": {"consumer.session.timeout.ms": "60000"}}
    assert doc["client_quotas"] == [{"entity": {"client-id": None}, "quotas": {"consumer_byte_rate": 2048}},
                                    {"entity": {"user": "alice"}, "quotas": {"producer_byte_rate": 1024}}]
    # The sensitive value is not in the file; the file says which key was left out, and why.
    assert SECRET not in path.read_text()
    assert doc["sensitive_left_out"]["brokers"] == {"1": ["listener.name.plaintext.ssl.key.password"]}
    assert "left out" in doc["note"] and "sensitive_left_out" in doc["note"]
    summary = {r["Section"]: r for r in json.loads(p.stdout)["exported"]}
    assert (summary["topics"]["Entities"], summary["topics"]["Configs"]) == (2, 3)
    assert summary["brokers"]["SensitiveLeftOut"] == 1
    assert "1 sensitive value(s) left out" in p.stderr
    # An existing file is never overwritten; nothing is read first.
    assert_one_line_error(run(configured, f"export-configs {path}"), 2, "already exists")


def test_import_shows_validates_then_executes(configured, tmp_path):
    path = tmp_path / "configs.json"
    doc = export(configured, path)
    p = run(configured, f"import-configs {path}", "-o", "json")
    assert p.returncode == 0 and json.loads(p.stdout) == {"changes": []}, p.stderr
    assert "The cluster matches" in p.stderr
    doc["topics"]["orders"] = {"retention.ms": "3600000"}          # cleanup.policy goes
    doc["topics"]["plain"] = {"retention.ms": 60000}                # a number is taken as Kafka's text
    doc["brokers"]["3"] = {"log.cleaner.threads": "2"}
    doc["brokers"]["2"] = {}
    doc["client_quotas"] = [{"entity": {"user": "alice"}, "quotas": {"consumer_byte_rate": 4096}}]
    del doc["groups"], doc["broker_defaults"]                      # sections not named are left alone
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(doc))
    p = run(configured, f"import-configs {changed}", "-o", "json")
    assert p.returncode == 0, p.stderr
    rows = [(r["Section"], r["Entity"], r["Name"], r["Value"], r["NewValue"], r["Action"]) for r in json_rows(p.stdout)]
    assert sorted(rows, key=str) == sorted([
        ("brokers", "2", "log.cleaner.threads", "2", None, "delete"),
        ("brokers", "3", "log.cleaner.threads", None, "2", "set"),
        ("topics", "orders", "retention.ms", "86400000", "3600000", "set"),
        ("topics", "orders", "cleanup.policy", "compact", None, "delete"),
        ("topics", "plain", "retention.ms", None, "60000", "set"),
        ("client_quotas", "user=alice", "consumer_byte_rate", None, 4096, "set"),
        ("client_quotas", "user=alice", "producer_byte_rate", 1024, None, "delete")], key=str)
    assert "validated by the cluster. Dry run: nothing was changed (add --execute to apply)." in p.stderr
    # Nothing changed: the sensitive key of broker 1 was never in play.
    assert export(configured, tmp_path / "again.json")["topics"]["orders"]["cleanup.policy"] == "compact"
    p = run(configured, f"import-configs {changed} --execute")
    assert p.returncode == 0 and "Changed the configs of 5 of 5 entities." in p.stderr, p.stderr
    after = export(configured, tmp_path / "after.json")
    assert after["topics"]["orders"] == {"retention.ms": "3600000"} and after["topics"]["plain"] == {"retention.ms": "60000"}
    assert after["brokers"] == {"1": {}, "2": {}, "3": {"log.cleaner.threads": "2"}}
    assert after["sensitive_left_out"]["brokers"] == {"1": ["listener.name.plaintext.ssl.key.password"]}
    assert after["groups"] == doc_groups() and after["broker_defaults"]["log.retention.ms"] == "7200000"
    assert {json.dumps(q, sort_keys=True) for q in after["client_quotas"]} >= {
        json.dumps({"entity": {"user": "alice"}, "quotas": {"consumer_byte_rate": 4096}}, sort_keys=True)}
    p = run(configured, f"import-configs {changed}")
    assert p.returncode == 0 and "The cluster matches" in p.stderr


def doc_groups() -> dict:
    return {"app": {"consumer.session.timeout.ms": "60000"}}


def test_import_refuses_what_the_cluster_refuses_and_changes_nothing(configured, tmp_path):
    path = tmp_path / "configs.json"
    doc = export(configured, path)
    doc["topics"]["orders"]["retention.ms"] = "soon"
    doc["topics"]["ghost"] = {"retention.ms": "1"}
    doc["topics"]["pay"] = {}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    p = run(configured, f"import-configs {bad} --execute")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert 'Topic "ghost" is not in the cluster' in p.stderr and "Not a number" in p.stderr
    assert "Nothing was changed: fix what is named above first." in p.stderr
    assert export(configured, tmp_path / "after.json")["topics"]["pay"] == {"max.message.bytes": "2000000"}


@pytest.mark.parametrize("content, needle", [
    ("not json", "is not valid JSON"),
    ("[]", "is not a configs file of export-configs"),
    ('{"format": "kafka-shell configs", "version": 9}', "version 9"),
    ('{"format": "kafka-shell configs", "version": 1, "topics": {"t": {"k": [1]}}}', "topics.t: k must be a value"),
    ('{"format": "kafka-shell configs", "version": 1, "brokers": {"one": {}}}', "is no broker id"),
    ('{"format": "kafka-shell configs", "version": 1, "client_quotas": [{"entity": {"group": "x"}, "quotas": {}}]}',
     "entity types"),
])
def test_import_of_a_bad_file_is_one_line(sandbox, tmp_path, content, needle):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert_one_line_error(run(sandbox, f"import-configs {path} --execute"), 2, needle)


def test_diff_configs_shows_drift_with_sources(configured):
    code, out, err = sh(configured, "diff-configs --all-brokers -o json")
    assert code == 0, err
    rows = json_rows(out)
    threads = {r["Broker"]: (r["Value"], r["Source"], r["Synonyms"]) for r in rows if r["Name"] == "log.cleaner.threads"}
    assert threads == {1: ("1", "DEFAULT_CONFIG", []), 2: ("2", "DYNAMIC_BROKER_CONFIG", ["DEFAULT_CONFIG:log.cleaner.threads=1"]),
                       3: ("1", "DEFAULT_CONFIG", [])}
    # A sensitive value differs by its source only, and is never shown.
    secret = {r["Broker"]: (r["Value"], r["Source"]) for r in rows if r["Name"].endswith("ssl.key.password")}
    assert secret == {1: ("******", "DYNAMIC_BROKER_CONFIG"), 2: (None, None), 3: (None, None)}
    assert {r["Name"] for r in rows} == {"log.cleaner.threads", "listener.name.plaintext.ssl.key.password"}
    assert "2 config(s) differ among brokers 1, 2, 3" in err
    code, out, err = sh(configured, "diff-configs --broker 1 --broker 3 --include-identity -o json")
    assert {r["Name"] for r in json_rows(out)} >= {"node.id", "broker.id", "listener.name.plaintext.ssl.key.password"}
    code, out, err = sh(configured, "diff-configs --broker 1 --broker 3")
    assert code == 0 and "log.cleaner.threads" not in out
    ok(configured, "alter-configs --broker 2 --delete-config log.cleaner.threads")
    ok(configured, "alter-configs --broker 1 --delete-config listener.name.plaintext.ssl.key.password")
    code, out, err = sh(configured, "diff-configs --all-brokers")
    assert code == 0 and "Brokers 1, 2, 3 agree on every config" in err and "--include-identity" in err


def test_diff_configs_bad_input(sandbox):
    for line, needle in (("diff-configs --broker 1", "two brokers or more"), ("diff-configs --broker 1 --broker 9", "9"),
                         ("diff-configs", "--broker")):
        assert_one_line_error(run(sandbox, line), 2, needle)


def test_diff_configs_names_a_broker_that_does_not_answer(configured):
    configured.delay(3, 5000)
    p = run(configured, "diff-configs --broker 1 --broker 2 --broker 3", "-o", "json", "--timeout", "2")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    rows = json_rows(p.stdout)   # what brokers 1 and 2 said
    assert {r["Broker"] for r in rows} == {1, 2} and {r["Name"] for r in rows} == {
        "log.cleaner.threads", "listener.name.plaintext.ssl.key.password"}
    assert "differ among brokers 1, 2" in p.stderr
    assert p.stderr.strip().splitlines()[-1] == "Broker 3 did not answer DescribeConfigs within 2 s"
