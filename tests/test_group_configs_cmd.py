"""describe-configs / alter-configs --entity-type groups (KIP-848/932 group configs) on the
sandbox and on real Kafka 4.4 alike; on a 3.9 cluster one line says they need Kafka 4.0; their
keys and closed values complete in the REPL."""

from __future__ import annotations

import time
import uuid

import pytest
from prompt_toolkit.document import Document

from kafka_shell.declarations.registry import load_commands
from kafka_shell.face.repl.completer import KafkaCompleter
from kafka_shell.sandbox.server import Sandbox
from tests.test_consumer_groups_cmd import rows
from tests.test_transactions_cmd import sh


@pytest.fixture(scope="module")
def sandbox3():
    with Sandbox(brokers=3) as s:
        yield s


def overrides(bootstrap: str, group: str) -> dict:
    return {r["name"]: (r["value"], r["source"]) for r in rows(
        bootstrap, f"describe-configs --entity-type groups --entity-name {group}")}


def eventually(read, done, timeout_s: float = 30):
    deadline = time.monotonic() + timeout_s   # Kafka's brokers learn of a config change from the metadata log
    while not done(found := read()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def group_config_facts(bootstrap: str) -> dict:
    group = "gc-" + uuid.uuid4().hex[:8]
    out: dict = {}
    out["none yet"] = overrides(bootstrap, group)
    out["all keys"] = sorted((r["name"], r["source"]) for r in rows(
        bootstrap, f"describe-configs --entity-type groups --entity-name {group} --all"))
    change = "consumer.session.timeout.ms=60000,share.auto.offset.reset=earliest"
    code, _, err = sh(bootstrap, f"alter-configs --entity-type groups --entity-name {group} --add-config {change}")
    out["set"] = (code, err.strip().replace(group, "G"))
    out["after set"] = eventually(lambda: overrides(bootstrap, group), lambda o: len(o) == 2)
    code, _, err = sh(bootstrap, f"alter-configs --entity-type groups --entity-name {group} "
                                 "--add-config consumer.session.timeout.ms=1 --dry-run")
    out["out of range"] = code
    code, _, err = sh(bootstrap, f"alter-configs --entity-type groups --entity-name {group} "
                                 "--add-config share.auto.offset.reset=sometimes")
    out["bad value"] = code
    code, _, err = sh(bootstrap, f"alter-configs --entity-type groups --entity-name {group} "
                                 "--delete-config share.auto.offset.reset")
    out["delete"] = code
    out["after delete"] = eventually(lambda: overrides(bootstrap, group), lambda o: len(o) == 1)
    code, _, err = sh(bootstrap, "describe-configs --entity-type groups --entity-default")
    out["default refused"] = (code, err.strip())
    return out


def test_group_configs_as_on_kafka(kafka4, sandbox3):
    real, ours = group_config_facts(kafka4.bootstrap), group_config_facts(sandbox3.bootstrap)
    assert ours["none yet"] == {} and ("consumer.session.timeout.ms", "DEFAULT_CONFIG") in ours["all keys"]
    assert ours["set"] == (0, 'Completed updating config for group "G".')
    assert ours["after set"] == {"consumer.session.timeout.ms": ("60000", "GROUP_CONFIG"),
                                 "share.auto.offset.reset": ("earliest", "GROUP_CONFIG")}
    assert ours["out of range"] == 1 and ours["bad value"] == 1 and ours["delete"] == 0
    assert ours["after delete"] == {"consumer.session.timeout.ms": ("60000", "GROUP_CONFIG")}
    assert ours["default refused"][0] == 2
    assert ours == real


def test_group_configs_need_kafka_4():
    with Sandbox(brokers=1, kafka_version="3.9") as old:
        code, _, err = sh(old.bootstrap, "describe-configs --entity-type groups --entity-name g")
        assert (code, err.strip()) == (1, "group configs need Kafka 4.0 or later; this cluster is 3.9.")
        code, _, err = sh(old.bootstrap, "alter-configs --entity-type groups --entity-name g "
                                         "--add-config consumer.session.timeout.ms=60000")
        assert (code, err.strip()) == (1, "group configs need Kafka 4.0 or later; this cluster is 3.9.")


def test_group_config_keys_and_values_complete():
    completer = KafkaCompleter(load_commands())

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), None)]

    keys = complete("alter-configs --entity-type groups --entity-name g --add-config consumer.ses")
    assert keys[0] == "consumer.session.timeout.ms="
    assert "share.isolation.level=" in complete("alter-configs --entity-type groups --entity-name g --add-config share.")
    assert complete("alter-configs --entity-type groups --entity-name g --add-config share.isolation.level=") == \
        ["read_committed", "read_uncommitted"]
    assert "earliest" in complete("alter-configs --entity-type groups --entity-name g --add-config "
                                  "share.auto.offset.reset=")
    assert sorted(complete("alter-configs --entity-type groups --entity-name g --add-config "
                           "errors.deadletterqueue.copy.record.enable=")) == ["false", "true"]
