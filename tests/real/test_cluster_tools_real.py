"""The cluster-level tools of issue 20 on real Apache Kafka: --bootstrap-controller alone with every
broker stopped, a controller added and removed for real (KIP-853), features, fenced and
unregistered brokers, broker loggers; on Kafka 3.9 in ZooKeeper mode, the commands whose API it
lacks say so in one line."""

from __future__ import annotations

import time

import pytest

from tests.output import json_tables
from tests.test_oneshot import assert_one_line_error, shell

WAIT_S = 90.0


def ok(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json_tables(proc.stdout) if proc.stdout.strip() else {}


def controllers_only(cluster, line: str):
    return shell("--bootstrap-controller", cluster.bootstrap_controllers, "-o", "json", "--timeout", "30",
                 "--command", line)


def wait_until(check, what: str):
    """Poll `check()` (a value, or None to go on) until it gives one: Kafka's changes land a
    moment after their answer, later on a loaded machine."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = check()
        if value is not None:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_controllers_alone_with_every_broker_stopped(kafka4_quorum):
    cluster = kafka4_quorum
    with cluster.restored():
        for broker in cluster.brokers:
            cluster.kill(broker.node_id)
        status = ok(controllers_only(cluster, "describe-quorum"))["status"][0]
        assert status["leader_id"] in (100, 101, 102) and status["kraft_version"] == 1
        assert status["cluster_id"] == cluster.cluster_id
        rows = ok(controllers_only(cluster, "describe-quorum --replication"))["replication"]
        voters = {r["node_id"]: r for r in rows if r["status"] in ("Leader", "Follower")}
        assert {i: r["directory_id"] for i, r in voters.items()} == {
            n.node_id: n.directory_id for n in cluster.controllers if not n.joining}
        assert all(r["endpoints"] == f"CONTROLLER://127.0.0.1:{cluster.nodes[i].port}" for i, r in voters.items())

        described = ok(controllers_only(cluster, "describe-cluster"))
        assert {c["id"] for c in described["controllers"]} >= {100, 101, 102}
        assert [c["id"] for c in described["controllers"] if c["is_active"]] == [status["leader_id"]]
        features = {f["feature"]: f for f in ok(controllers_only(cluster, "describe-features"))["features"]}
        assert features["metadata.version"]["finalized_version_level"] == "4.4-IV2"
        assert features["kraft.version"]["finalized_level"] == 1
        dry = controllers_only(cluster, "disable-feature --feature streams.version --dry-run")
        assert ok(dry)["changes"][0]["new_version_level"] == "0" and "could be disabled" in dry.stderr

        configs = {r["name"]: r["value"] for r in ok(controllers_only(cluster, "describe-configs --broker 101 --all"))["configs"]}
        assert configs["node.id"] == "101" and configs["process.roles"] == "controller"
        ok(controllers_only(cluster, "describe-configs --entity-default"))
        loggers = ok(controllers_only(cluster, "describe-configs --entity-type broker-loggers --entity-name 101"))
        assert "root" in {r["name"] for r in loggers["configs"]}
        for line in ("list-topics", "list-groups"):
            assert_one_line_error(controllers_only(cluster, line), 1, "needs a broker", "--bootstrap-server")


def following(cluster, new_id: int) -> dict:
    """The new controller's row of describe-quorum once it follows the quorum as an observer,
    caught up (within a few records)."""
    def caught_up():
        rows = ok(controllers_only(cluster, "describe-quorum --replication"))["replication"]
        high = max(r["log_end_offset"] for r in rows)
        me = [r for r in rows if r["node_id"] == new_id and r["status"] == "Observer"]
        return me[0] if me and me[0]["log_end_offset"] >= high - 5 else None
    return wait_until(caught_up, f"controller {new_id} to follow the quorum")


def made_voter(cluster, new_id: int):
    """add-controller --yes, asked again while Kafka says the new controller lags behind."""
    def added():
        p = controllers_only(cluster, f"add-controller --controller-id {new_id} --yes")
        return p if p.returncode == 0 or "lagging behind" not in p.stderr else None
    p = wait_until(added, "Kafka to take the new controller")
    assert p.returncode == 0, p.stderr
    return p


def test_a_controller_added_and_removed_for_real(kafka4_quorum):
    cluster = kafka4_quorum
    new_id = 105
    node = cluster.add_controller(new_id)
    try:
        assert following(cluster, new_id)["directory_id"] == node.directory_id
        plan = ok(controllers_only(cluster, f"add-controller --controller-id {new_id} --dry-run"))["voters"]
        assert plan[-1] == {"node_id": new_id, "directory_id": node.directory_id,
                            "endpoints": f"CONTROLLER://127.0.0.1:{node.port}", "change": "add"}
        p = made_voter(cluster, new_id)
        assert "voters {100, 101, 102} -> {100, 101, 102, 105}" in p.stderr
        voters = {r["node_id"] for r in ok(controllers_only(cluster, "describe-quorum --replication"))["replication"]
                  if r["status"] != "Observer"}
        assert voters == {100, 101, 102, new_id}
        p = shell("--bootstrap-server", cluster.bootstrap, "--command",
                  f"remove-controller --controller-id {new_id} --controller-directory-id {node.directory_id} --yes")
        assert p.returncode == 0, p.stderr
        assert "voters {100, 101, 102, 105} -> {100, 101, 102}" in p.stderr
    finally:
        cluster.forget(new_id)


def test_fenced_then_unregistered_broker(kafka4):
    both = ("--bootstrap-server", kafka4.bootstrap, "--bootstrap-controller", kafka4.bootstrap_controllers,
            "-o", "json", "--timeout", "30")
    with kafka4.restored():
        kafka4.kill(3)

        def fenced():
            brokers = {b["id"]: b for b in ok(shell(*both, "--command", "describe-cluster"))["brokers"]}
            return brokers if brokers.get(3, {}).get("is_fenced") else None
        brokers = wait_until(fenced, "broker 3 to be fenced")
        assert (brokers[1]["is_fenced"], brokers[3]["status"]) == (False, "offline")
        p = shell(*both, "--command", "unregister-broker --id 3 --yes")
        assert p.returncode == 0 and "Broker 3 was unregistered." in p.stderr, p.stderr
        brokers = {b["id"]: b for b in ok(shell(*both, "--command", "describe-cluster"))["brokers"]}
        assert brokers.get(3, {}).get("is_fenced") is None
        assert_one_line_error(shell(*both, "--command", "unregister-broker --id 3 --yes"), 1, "not currently registered")


def test_broker_loggers_on_kafka(kafka4):
    base = ("--bootstrap-server", kafka4.bootstrap, "-o", "json")
    logger = "kafka.server.ReplicaManager"

    def level() -> str:
        rows = ok(shell(*base, "--command", "describe-configs --entity-type broker-loggers --entity-name 1"))["configs"]
        return {r["name"]: r["value"] for r in rows}[logger]
    before = level()
    ok(shell(*base, "--command", f"alter-configs --entity-type broker-loggers --entity-name 1 --add-config {logger}=TRACE"))
    assert level() == "TRACE"
    ok(shell(*base, "--command", f"alter-configs --entity-type broker-loggers --entity-name 1 --delete-config {logger}"))
    assert level() == before


@pytest.mark.parametrize("line", ["describe-quorum", "add-controller --controller-id 7 --controller-directory-id "
                                  "AAAAAAAAAAAAAAAAAAAAAQ --controller-endpoint CONTROLLER@h:1 --yes",
                                  "remove-controller --controller-id 7 --controller-directory-id AAAAAAAAAAAAAAAAAAAAAQ --yes",
                                  "unregister-broker --id 3 --yes"])
def test_zookeeper_mode_lacks_the_apis(kafka39_zk, line):
    p = shell("--bootstrap-server", kafka39_zk.bootstrap, "--command", line)
    assert_one_line_error(p, 1, "not supported by this cluster")


def test_delegation_tokens_on_kafka(kafka4_secured):
    """Create, describe, renew and expire on Kafka 4.4 over SASL; its refusals (with their -1
    times) read in one line; the HMAC shown by create only."""
    from tests.real_kafka import SECURED_USERS
    base = ("--bootstrap-server", kafka4_secured.bootstrap, "-o", "json", "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=admin", "-X", "sasl.password=${ADMIN_PW}")
    env = {"ADMIN_PW": SECURED_USERS["admin"]}
    made = shell(*base, "--command", "create-delegation-token --renewer-principal User:alice "
                 "--max-life-time-period 3600000", env=env)
    [token] = ok(made)["token"]
    assert (token["owner"], token["renewers"], token["max_date"] - token["issue_date"]) == ("User:admin", ["User:alice"], 3600000)
    listed = {t["token_id"]: t for t in ok(shell(*base, "--command", "describe-delegation-token", env=env))["tokens"]}
    assert token["token_id"] in listed and "hmac" not in listed[token["token_id"]]
    renewed = ok(shell(*base, "--command", f"renew-delegation-token --hmac {token['hmac']} --renew-time-period 60000",
                       env=env))["token"][0]["expiry_date"]
    assert token["issue_date"] < renewed <= token["max_date"]
    assert_one_line_error(shell(*base, "--command", "renew-delegation-token --hmac bm9wZQ==", env=env), 1,
                          "DELEGATION_TOKEN_NOT_FOUND")
    assert_one_line_error(shell(*base, "--command", "create-delegation-token --renewer-principal Group:g", env=env),
                          1, "INVALID_PRINCIPAL_TYPE")
    ok(shell(*base, "--command", f"expire-delegation-token --hmac {token['hmac']} --yes", env=env))
    listed = {t["token_id"] for t in ok(shell(*base, "--command", "describe-delegation-token", env=env))["tokens"]}
    assert token["token_id"] not in listed
