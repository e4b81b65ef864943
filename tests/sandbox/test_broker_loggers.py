"""Broker loggers (BROKER_LOGGER config resources) on the sandbox and on real Kafka 4.4, with raw
DescribeConfigs and IncrementalAlterConfigs: the loggers each node lists, SET and DELETE of
levels, and Kafka's refusals."""

from __future__ import annotations

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import exchange

BROKER_LOGGER = 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
API = "kafka.server.KafkaApis"


def describe(address, name: str, keys: list[str] | None = None, documentation: bool = False) -> dict:
    answer = exchange(address, ApiKey.DESCRIBE_CONFIGS, 4, {"resources": [
        {"resource_type": BROKER_LOGGER, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": documentation})
    assert isinstance(answer, dict), answer
    return answer["results"][0]


def levels(address, name: str, keys: list[str]) -> list[tuple[str, str]]:
    return sorted((c["name"], c["value"]) for c in describe(address, name, keys)["configs"])


def alter(address, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False) -> tuple[int, str | None]:
    answer = exchange(address, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"validate_only": validate_only, "resources": [
        {"resource_type": BROKER_LOGGER, "resource_name": name,
         "configs": [{"name": n, "config_operation": o, "value": v} for n, o, v in ops]}]})
    assert isinstance(answer, dict), answer
    r = answer["responses"][0]
    return r["error_code"], r["error_message"]


def entry_shape(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k not in ("name", "value")}


def scenario(broker, broker_id: int, controller, controller_id: int) -> list:
    b, c = str(broker_id), str(controller_id)
    out: list = []
    whole = describe(broker, b, documentation=True)
    out.append(("described", whole["error_code"], whole["error_message"],
                sorted({str(entry_shape(e)) for e in whole["configs"]}), {e["value"] for e in whole["configs"]}))
    for name in (str(broker_id + 1), "x"):
        refused = describe(broker, name)
        out.append(("describe " + name, refused["error_code"], refused["error_message"]))
    try:
        for ops in ([(API, SET, "DEBUG")], [("root", SET, "BAD")], [("root", SET, "debug")], [("root", DELETE, None)],
                    [(API, APPEND, "DEBUG")], [(API, SUBTRACT, "DEBUG")], [("no.such.logger", SET, "DEBUG")],
                    [("no.such.logger", DELETE, None)], [(API, 7, "DEBUG")], [(API, SET, None)],
                    [(API, SET, "TRACE"), (API, SET, "INFO")], [("root", SET, "WARN")],
                    [("root", SET, "ERROR"), ("nope", SET, "INFO")]):
            out.append((str(ops), alter(broker, b, *ops)))
        out.append(("another node", alter(broker, str(broker_id + 1), ("root", SET, "INFO"))))
        out.append(("validate only", alter(broker, b, ("root", SET, "TRACE"), validate_only=True)))
        out.append(("set", levels(broker, b, ["root", API, "kafka.network.Processor"])))
        out.append(("delete", alter(broker, b, (API, DELETE, None)), levels(broker, b, ["root", API])))
        out.append(("on the controller", alter(controller, c, ("root", SET, "WARN")),
                    levels(controller, c, ["root", "kafka.server.ControllerApis"])))
    finally:
        alter(broker, b, ("root", SET, "INFO"), (API, DELETE, None))
        alter(controller, c, ("root", SET, "INFO"))
    out.append(("back", levels(broker, b, ["root", API])))
    return out


def test_broker_loggers_as_kafka_4_has_them(kafka4):
    broker, controller = ("127.0.0.1", kafka4.brokers[0].port), ("127.0.0.1", kafka4.controllers[0].port)
    theirs = scenario(broker, kafka4.brokers[0].node_id, controller, kafka4.controllers[0].node_id)
    real_broker = {e["name"] for e in describe(broker, str(kafka4.brokers[0].node_id))["configs"]}
    real_controller = {e["name"] for e in describe(controller, str(kafka4.controllers[0].node_id))["configs"]}
    with Sandbox(brokers=3) as sb:
        ours = scenario(sb.address(1), 1, sb.address(100), 100)
        mine_broker = {e["name"] for e in describe(sb.address(1), "1")["configs"]}
        mine_controller = {e["name"] for e in describe(sb.address(100), "100")["configs"]}
    assert [s for s in ours if s not in theirs] == [s for s in theirs if s not in ours]
    # Every logger the sandbox lists is one Kafka lists (Kafka lists more: org.apache.kafka.*).
    assert mine_broker <= real_broker and mine_controller <= real_controller


def test_a_restarted_broker_starts_from_info():
    with Sandbox(brokers=1) as sb:
        assert alter(sb.address(1), "1", (API, SET, "TRACE")) == (0, None)
        assert levels(sb.address(1), "1", [API]) == [(API, "TRACE")]
        sb.stop_broker(1)
        sb.start_broker(1)
        assert levels(sb.address(1), "1", [API]) == [(API, "INFO")]
