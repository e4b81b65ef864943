"""Client metrics subscriptions (CLIENT_METRICS config resources, KIP-714) on the sandbox and on
real Kafka 4.4, with raw DescribeConfigs, IncrementalAlterConfigs and ListConfigResources."""

from __future__ import annotations

import time
import uuid

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import exchange

CLIENT_METRICS = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def describe(address, name: str, synonyms: bool = True, documentation: bool = False) -> dict:
    answer = exchange(address, ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": CLIENT_METRICS, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": synonyms, "include_documentation": documentation})
    assert isinstance(answer, dict), answer
    result = {k: v for k, v in answer["results"][0].items() if k != "resource_name"}   # a name of each run's own
    return {**result, "configs": sorted(result["configs"], key=lambda c: c["name"])}


def alter(address, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False) -> tuple[int, str | None]:
    answer = exchange(address, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": validate_only, "resources": [
        {"resource_type": CLIENT_METRICS, "resource_name": name,
         "configs": [{"name": n, "config_operation": o, "value": v} for n, o, v in ops]}]})
    assert isinstance(answer, dict), answer
    return answer["responses"][0]["error_code"], answer["responses"][0]["error_message"]


def listed(address, version: int = 1) -> list[str]:
    answer = exchange(address, ApiKey.LIST_CONFIG_RESOURCES, version, {"resource_types": [CLIENT_METRICS] if version else []})
    assert isinstance(answer, dict) and answer["error_code"] == 0, answer
    return sorted(r["resource_name"] for r in answer["config_resources"])


def until_described(address, name: str, done) -> dict:
    """Brokers learn a subscription from the metadata log a moment after the controller stored it."""
    deadline = time.monotonic() + 30
    while not done(answer := describe(address, name)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return answer


def scenario(address) -> list:
    name = f"sub-{uuid.uuid4().hex[:8]}"
    out: list = [("unknown", describe(address, name, documentation=True))]
    for ops in ([("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "10000"),
                 ("match", SET, "client_id=abc,client_software_name=.*python.*")],
                [("interval.ms", SET, "50")], [("interval.ms", SET, "9999999999")], [("interval.ms", SET, "x")],
                [("interval.ms", SET, "3600001")], [("match", SET, "client_id=[")], [("match", SET, "foo=bar")],
                [("match", SET, "client_id")], [("match", SET, "client_id=")], [("nope", SET, "1")],
                [("metrics", APPEND, "x.y")], [("metrics", SUBTRACT, "x.y")], [("metrics", SET, "a,a")],
                [("metrics", SET, "a,,b")], [("metrics", SET, None)], [("metrics", SET, "*")]):
        out.append((str(ops), alter(address, name, *ops)))
    out.append(("empty name", alter(address, "", ("metrics", SET, "x"))))
    out.append(("validate only", alter(address, name, ("interval.ms", SET, "1000"), validate_only=True)))
    out.append(("described", until_described(address, name, lambda a: a["configs"][2]["value"] == "*")))
    out.append(("listed", name in listed(address), name in listed(address, version=0)))
    out.append(("partly deleted", alter(address, name, ("metrics", DELETE, None), ("match", DELETE, None))))
    out.append(("after", until_described(address, name, lambda a: a["configs"][1]["value"] == "")))
    out.append(("all deleted", alter(address, name, ("interval.ms", DELETE, None))))
    deadline = time.monotonic() + 30
    while name in listed(address) and time.monotonic() < deadline:
        time.sleep(0.1)
    out.append(("gone", name in listed(address)))
    return out


def test_client_metrics_as_kafka_4_has_them(kafka4):
    theirs = scenario(("127.0.0.1", kafka4.brokers[0].port))
    with Sandbox(brokers=3) as sb:
        ours = scenario(sb.address(1))
    assert [s for s in ours if s not in theirs] == [s for s in theirs if s not in ours]


def test_data_dir_keeps_subscriptions(tmp_path):
    with Sandbox(brokers=1, data_dir=str(tmp_path)) as sb:
        assert alter(sb.address(1), "kept", ("metrics", SET, "*"), ("interval.ms", SET, "1000")) == (0, None)
    with Sandbox(data_dir=str(tmp_path)) as sb:
        assert listed(sb.address(1)) == ["kept"]
        assert [(c["name"], c["value"]) for c in describe(sb.address(1), "kept")["configs"]] == [
            ("interval.ms", "1000"), ("match", ""), ("metrics", "*")]
