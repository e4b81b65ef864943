"""The cluster-level tools of Kafka 4.x (issue 20), run as a real process: --bootstrap-controller
alone with every broker stopped, the dynamic quorum (add-controller, remove-controller), features,
unregister-broker and fenced brokers, broker loggers; on the sandbox here, on real Kafka in
tests/real/test_cluster_tools_real.py."""

from __future__ import annotations

import json

import pytest

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.server import Sandbox
from tests.output import json_tables
from tests.test_oneshot import assert_one_line_error, shell


def ctl(sandbox, line: str, *extra: str, **kw):
    """kafka-shell with the controllers alone (KIP-919)."""
    return shell("--bootstrap-controller", sandbox.bootstrap_controllers, *extra, "--command", line, **kw)


def ok(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json_tables(proc.stdout) if proc.stdout.strip() else {}


@pytest.fixture
def dynamic():
    """Three voters (100-102) of a dynamic quorum and two brokers."""
    with Sandbox(brokers=2, controllers=3, dynamic_quorum=True, serve_control=True) as sb:
        yield sb


def test_controllers_alone_with_every_broker_stopped(dynamic):
    sb = dynamic
    for b in (1, 2):
        sb.stop_broker(b)
    status = ok(ctl(sb, "describe-quorum", "-o", "json"))["status"][0]
    assert status["leader_id"] == sb.active_controller and status["kraft_version"] == 1
    assert status["cluster_id"] == sb.cluster.cluster_id
    replication = ok(ctl(sb, "describe-quorum --replication", "-o", "json"))["replication"]
    voters = {r["node_id"]: r for r in replication if r["status"] != "Observer"}
    assert set(voters) == {100, 101, 102}
    directories = {c["id"]: c["directory_id"] for c in sb.status()["controllers"]}
    assert {i: r["directory_id"] for i, r in voters.items()} == directories
    assert all(r["endpoints"] == "CONTROLLER://{}:{}".format(*sb.address(i)) for i, r in voters.items())

    described = ok(ctl(sb, "describe-cluster", "-o", "json"))
    assert described["cluster"][0]["controller"] == sb.active_controller
    assert {c["id"]: (c["role"], c["is_active"]) for c in described["controllers"]} == {
        i: ("voter", i == sb.active_controller) for i in (100, 101, 102)}
    assert {b["id"] for b in described["brokers"]} == {1, 2}   # they follow the metadata log

    features = {f["feature"]: f for f in ok(ctl(sb, "describe-features", "-o", "json"))["features"]}
    assert features["metadata.version"]["finalized_version_level"] == "4.4-IV2"
    assert features["kraft.version"]["finalized_level"] == 1

    ok(ctl(sb, "alter-configs --entity-default --add-config log.retention.ms=7200000"))
    rows = ok(ctl(sb, "describe-configs --entity-default", "-o", "json"))["configs"]
    assert {r["name"]: r["value"] for r in rows}["log.retention.ms"] == "7200000"
    node = ok(ctl(sb, "describe-configs --broker 101 --all", "-o", "json"))["configs"]
    assert {r["name"]: r["value"] for r in node}["node.id"] == "101"

    # What only a broker serves says so, in one line.
    for line in ("list-topics", "describe-topic --topic t", "list-groups"):
        assert_one_line_error(ctl(sb, line), 1, "needs a broker", "--bootstrap-server")
    assert_one_line_error(ctl(sb, "describe-configs --broker 1"), 2, "Controller 1 is not in the cluster",
                          "controllers: 100, 101, 102")

    ok(ctl(sb, "unregister-broker --id 2 --yes"))
    sb.start_broker(1)
    registered = ok(shell("--bootstrap-server", sb.bootstrap, "--command", "describe-cluster", "-o", "json"))
    assert {b["id"]: b["is_fenced"] for b in registered["brokers"]} == {1: False}   # 2 is gone


def test_greeting_and_clusters_json_with_controllers_only(dynamic, tmp_path):
    sb = dynamic
    env = {"KAFKA_SHELL_CONFIG_DIR": str(tmp_path)}
    ok(shell("--command", f"add-cluster ctl --bootstrap-controller {sb.bootstrap_controllers}", env=env))
    clusters = json.loads((tmp_path / "clusters.json").read_text())["clusters"]
    assert clusters["ctl"]["bootstrap_controller"] == sb.bootstrap_controllers
    status = ok(shell("--cluster", "ctl", "--command", "describe-quorum", "-o", "json", env=env))["status"][0]
    assert status["leader_id"] == sb.active_controller
    assert_one_line_error(shell("--command", "add-cluster x", env=env), 2, "--bootstrap-server, --bootstrap-controller")
    # The interactive shell greets with what it reached: the controllers, and no broker.
    p = shell("--bootstrap-controller", sb.bootstrap_controllers, "--shell", stdin="describe-features\n")
    assert "Connected to the controllers of cluster " + sb.cluster.cluster_id in p.stderr, p.stderr
    assert "3 controller(s): 100, 101, 102" in p.stderr and "No broker given" in p.stderr


def test_add_and_remove_a_controller(dynamic):
    sb = dynamic
    new = sb.add_controller()
    node_id, directory = new["id"], new["directory_id"]
    line = f"add-controller --controller-id {node_id}"
    # Outside the REPL it needs --yes, and nothing changes without it.
    assert_one_line_error(ctl(sb, line), 2, "voters {100, 101, 102} -> {100, 101, 102, 103}", "--yes")
    plan = ok(ctl(sb, line + " --dry-run", "-o", "json"))["voters"]
    assert plan[-1] == {"node_id": node_id, "directory_id": directory, "endpoints": "CONTROLLER://{}:{}".format(*sb.address(node_id)),
                        "change": "add"}
    assert {c["id"] for c in sb.status()["controllers"] if c["voter"]} == {100, 101, 102}
    p = ctl(sb, line + " --yes")
    assert p.returncode == 0, p.stderr
    assert f"Added controller {node_id} (directory {directory}" in p.stderr
    assert {c["id"] for c in sb.status()["controllers"] if c["voter"]} == {100, 101, 102, node_id}

    # Kafka's refusals, one line each.
    assert_one_line_error(ctl(sb, line + " --yes"), 2, f"Controller {node_id} already votes")
    assert_one_line_error(ctl(sb, "add-controller --controller-id 7 --yes"), 2, "does not follow the quorum")
    removal = f"remove-controller --controller-id {node_id} --controller-directory-id {directory}"
    assert_one_line_error(ctl(sb, f"remove-controller --controller-id {node_id} --controller-directory-id "
                                  "AAAAAAAAAAAAAAAAAAAAAQ --yes"), 2, f"has directory id {directory}")
    assert_one_line_error(ctl(sb, "remove-controller --controller-id 5 --controller-directory-id "
                                  "AAAAAAAAAAAAAAAAAAAAAQ --yes"), 2, "is no voter")
    p = shell("--bootstrap-server", sb.bootstrap, "--command", removal + " --yes")   # through a broker
    assert p.returncode == 0, p.stderr
    assert "voters {100, 101, 102, 103} -> {100, 101, 102}" in p.stderr
    assert {c["id"] for c in sb.status()["controllers"] if c["voter"]} == {100, 101, 102}


def new_controller_config(sb, tmp_path):
    """A controller added to the sandbox, and the properties file a new controller is started
    with (its metadata log dir holding meta.properties): (its info, the file)."""
    new = sb.add_controller()
    host, port = sb.address(new["id"])
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "meta.properties").write_text(f"version=1\ndirectory.id={new['directory_id']}\nnode.id={new['id']}\n")
    config = tmp_path / "controller.properties"
    config.write_text(f"process.roles=controller\nnode.id={new['id']}\ncontroller.listener.names=CONTROLLER\n"
                      f"listeners=CONTROLLER://{host}:{port}\nmetadata.log.dir={tmp_path / 'meta'}\n")
    return new, config


def test_add_controller_from_its_config(dynamic, tmp_path):
    sb = dynamic
    new, config = new_controller_config(sb, tmp_path)
    plan = ok(ctl(sb, f"add-controller --config {config} --dry-run", "-o", "json"))["voters"]
    assert plan[-1]["node_id"] == new["id"] and plan[-1]["directory_id"] == new["directory_id"]
    assert_one_line_error(ctl(sb, f"add-controller --config {tmp_path / 'missing.properties'}"), 2)


def test_features(dynamic):
    sb = dynamic
    before = {f["feature"]: f["finalized_level"] for f in ok(ctl(sb, "describe-features", "-o", "json"))["features"]}
    p = shell("--bootstrap-server", sb.bootstrap, "--command", "describe-features")
    assert "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.4-IV2\t" \
           "FinalizedVersionLevel: 4.4-IV2\tEpoch: " in p.stdout
    assert_one_line_error(ctl(sb, "upgrade-features --metadata 4.1 --yes"), 1, "Can't downgrade the version")
    assert_one_line_error(ctl(sb, "downgrade-features --metadata 4.1 --yes"), 1,
                          "Refusing to perform the requested downgrade")
    assert_one_line_error(ctl(sb, "upgrade-features --metadata 9.9"), 2, "Unknown metadata.version '9.9'")
    assert_one_line_error(ctl(sb, "upgrade-features"), 2, "Give --metadata VERSION or --feature NAME=LEVEL")
    dry = ctl(sb, "disable-feature --feature streams.version --dry-run", "-o", "json")
    assert ok(dry)["changes"] == [{"feature": "streams.version", "finalized_version_level": "1", "new_version_level": "0"}]
    assert "streams.version could be disabled." in dry.stderr
    assert_one_line_error(ctl(sb, "disable-feature --feature streams.version"), 2, "--yes")
    after_refusal = {f["feature"]: f["finalized_level"] for f in ok(ctl(sb, "describe-features", "-o", "json"))["features"]}
    assert after_refusal == before
    p = ctl(sb, "disable-feature --feature streams.version --yes")
    assert p.returncode == 0 and "streams.version was disabled." in p.stderr, p.stderr
    p = ctl(sb, "upgrade-features --feature streams.version=1 --yes")
    assert p.returncode == 0 and "streams.version was upgraded to 1." in p.stderr, p.stderr
    mapping = shell("--command", "version-mapping --release-version 4.0")   # no cluster needed
    assert mapping.stdout.splitlines() == ["metadata.version=25 (4.0)", "kraft.version=1", "transaction.version=2",
                                           "group.version=1", "eligible.leader.replicas.version=0",
                                           "share.version=0", "streams.version=0"]


def test_fenced_brokers_and_unregister(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 3)
    sandbox.stop_broker(2)
    both = ("--bootstrap-server", sandbox.bootstrap, "--bootstrap-controller", sandbox.bootstrap_controllers)
    described = ok(shell(*both, "--command", "describe-cluster", "-o", "json"))
    assert {b["id"]: (b["status"], b["is_fenced"]) for b in described["brokers"]} == {
        1: ("online", False), 2: ("offline", True), 3: ("online", False)}
    assert [c["id"] for c in described["controllers"]] == [100]
    assert_one_line_error(shell(*both, "--command", "unregister-broker --id 2"), 2, "Unregister broker 2", "--yes")
    p = shell(*both, "--command", "unregister-broker --id 2 --yes")
    assert p.returncode == 0 and p.stderr.strip() == "Broker 2 was unregistered.", p.stderr
    described = ok(shell(*both, "--command", "describe-cluster", "-o", "json"))
    assert {b["id"]: b["is_fenced"] for b in described["brokers"]} == {1: False, 2: None, 3: False}   # named by replicas
    assert_one_line_error(shell(*both, "--command", "unregister-broker --id 2 --yes"), 1, "not currently registered")


def test_broker_loggers(sandbox):
    base = ("--bootstrap-server", sandbox.bootstrap)
    logger = "kafka.server.ReplicaManager"

    def levels() -> dict[str, str]:
        rows = ok(shell(*base, "--command", "describe-configs --entity-type broker-loggers --entity-name 1",
                        "-o", "json"))["configs"]
        assert {r["source"] for r in rows} == {"DYNAMIC_BROKER_LOGGER_CONFIG"}
        return {r["name"]: r["value"] for r in rows}
    assert levels()[logger] == "INFO"
    ok(shell(*base, "--command", f"alter-configs --entity-type broker-loggers --entity-name 1 --add-config {logger}=DEBUG"))
    assert levels()[logger] == "DEBUG"
    ok(shell(*base, "--command", f"alter-configs --entity-type broker-loggers --entity-name 1 --delete-config {logger}"))
    assert levels()[logger] == "INFO"
    assert_one_line_error(shell(*base, "--command", "alter-configs --entity-type broker-loggers --entity-name 1 "
                                "--add-config kafka.server.ReplicaManager=LOUD"), 1, "LOUD")
    assert_one_line_error(shell(*base, "--command", "describe-configs --entity-type broker-loggers --entity-default"),
                          2, "--entity-default applies to brokers")


def test_broker_logger_names_complete(sandbox):
    from kafka_shell.face.repl.completer import KafkaCompleter
    from kafka_shell.declarations.registry import load_commands
    from kafka_shell.connection.session import Session, Target
    from prompt_toolkit.document import Document
    session = Session(target=Target(sandbox.bootstrap))
    try:
        from kafka_shell.admin import configs
        completer = KafkaCompleter(load_commands(), session.conn.connect(),
                                   overrides=lambda kind, name: configs.overrides(session.conn, kind, name))
        line = "alter-configs --entity-type broker-loggers --entity-name 1 --add-config kafka.server.Repl"
        found = [c.text for c in completer.get_completions(Document(line))]
        assert "kafka.server.ReplicaManager=" in found
        line = "alter-configs --entity-type broker-loggers --entity-name 1 --add-config kafka.server.ReplicaManager=DE"
        assert [c.text for c in completer.get_completions(Document(line))] == ["DEBUG"]
    finally:
        session.close()


def test_version_mapping_matches_kafkas_tool():
    """Every metadata version, as Kafka 4.4's own kafka-features prints its mapping."""
    import subprocess
    from kafka_shell.admin import features
    from tests.real_kafka import KAFKA_4, kafka_libs
    libs = kafka_libs(KAFKA_4)
    for name in [None, "3.3", "4.1", *(n for n, _, _ in features.metadata_versions())]:
        args = ["--release-version", name] if name else []
        theirs = subprocess.run(["java", "-cp", f"{libs}/*", "org.apache.kafka.tools.FeatureCommand",
                                 "version-mapping", *args], capture_output=True, text=True, timeout=120)
        ours = shell("--command", "version-mapping" + (f" --release-version {name}" if name else ""))
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout.strip() == theirs.stdout.strip(), name


def test_client_metrics_subscriptions(sandbox):
    base = ("--bootstrap-server", sandbox.bootstrap)
    p = shell(*base, "--command", "list-client-metrics")
    assert p.returncode == 0 and p.stderr.strip() == "No client metrics subscriptions.", p.stderr
    ok(shell(*base, "--command", "alter-client-metrics --name producers --metrics org.apache.kafka.producer.,"
                                 "org.apache.kafka.consumer. --interval 60000 --match client_software_name=kafka-python"))
    dry = shell(*base, "--command", "alter-client-metrics --name other --metrics '*' --dry-run")
    assert dry.returncode == 0 and "(dry run)" in dry.stderr, dry.stderr
    assert shell(*base, "--command", "list-client-metrics").stdout.split() == ["producers"]   # the dry run made none
    [sub] = ok(shell(*base, "--command", "describe-client-metrics --name producers", "-o", "json"))["subscriptions"]
    assert sub == {"name": "producers", "metrics": ["org.apache.kafka.producer.", "org.apache.kafka.consumer."],
                   "interval_ms": 60000, "match": ["client_software_name=kafka-python"]}
    text = shell(*base, "--command", "describe-client-metrics").stdout
    assert text.splitlines()[:2] == ["Client metrics configs for name:producers are:", "  interval.ms=60000"]
    assert_one_line_error(shell(*base, "--command", "alter-client-metrics --name x --match foo=bar"), 1,
                          "Illegal client matching pattern")
    assert_one_line_error(shell(*base, "--command", "alter-client-metrics --name x"), 2, "--metrics, --interval or --match")
    assert_one_line_error(shell(*base, "--command", "delete-client-metrics --name producers"), 2, "--yes")
    ok(shell(*base, "--command", "delete-client-metrics --name producers --yes"))
    assert shell(*base, "--command", "list-client-metrics", "-o", "json").stdout.strip() == '{\n "subscriptions": []\n}'


TOKEN_USERS = {"admin": "admin-pw", "alice": "alice-pw"}


def test_delegation_tokens(tmp_path):
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], users=TOKEN_USERS,
                 configs={"delegation.token.secret.key": "token-secret"}) as sb:
        history = tmp_path / "data"
        base = ("--bootstrap-server", sb.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN",
                "-X", "sasl.username=admin", "-X", "sasl.password=${ADMIN_PW}")
        env = {"ADMIN_PW": TOKEN_USERS["admin"], "KAFKA_SHELL_DATA_DIR": str(history)}
        made = shell(*base, "--command", "create-delegation-token --renewer-principal User:alice "
                     "--max-life-time-period 3600000", "-o", "json", env=env)
        [token] = ok(made)["token"]
        assert (token["owner"], token["renewers"], token["max_date"] - token["issue_date"]) == ("User:admin", ["User:alice"], 3600000)
        assert "it is not shown again" in made.stderr and token["hmac"] not in made.stderr
        [listed] = ok(shell(*base, "--command", "describe-delegation-token", "-o", "json", env=env))["tokens"]
        assert "hmac" not in listed and listed["token_id"] == token["token_id"]
        renewed = ok(shell(*base, "--command", f"renew-delegation-token --hmac {token['hmac']} --renew-time-period 60000",
                           "-o", "json", env=env))["token"][0]["expiry_date"]
        assert renewed <= token["max_date"]
        # Refusals carry -1 times, read all the same, and each says what went wrong in one line.
        assert_one_line_error(shell(*base, "--command", "renew-delegation-token --hmac bm9wZQ==", env=env), 1,
                              "DELEGATION_TOKEN_NOT_FOUND")
        assert_one_line_error(shell(*base, "--command", "create-delegation-token --renewer-principal Group:g", env=env),
                              1, "INVALID_PRINCIPAL_TYPE")
        assert_one_line_error(shell(*base, "--command", f"expire-delegation-token --hmac {token['hmac']}", env=env), 2, "--yes")
        ok(shell(*base, "--command", f"expire-delegation-token --hmac {token['hmac']} --yes", "-o", "json", env=env))
        assert ok(shell(*base, "--command", "describe-delegation-token", "-o", "json", env=env))["tokens"] == []
        # Piped lines (replay) are not kept in history; nothing the shell wrote holds the HMAC.
        assert not any(token["hmac"] in f.read_text(errors="replace") for f in history.rglob("*") if f.is_file())
    with Sandbox(brokers=1) as plain:
        assert_one_line_error(shell("--bootstrap-server", plain.bootstrap, "--command", "describe-delegation-token"),
                              2, "needs a SASL connection")


def test_recovery_prefers_an_eligible_leader_replica_that_answers():
    """As Kafka 4.x's controller elects an ELR member when the ISR is empty (KIP-966): a replica
    outside the ELR with a longer log or a higher epoch is not chosen over one inside it."""
    from kafka_shell.admin.recovery import DESIGNATED_PATH, LIVE, STOCK_PATH, Replica, Target, choose
    for path in (DESIGNATED_PATH, STOCK_PATH):
        t = Target("t", 0, (1, 2, 3), -1, [Replica(1, LIVE, False, epoch=9, log_end=120),
                                            Replica(2, LIVE, True, True, epoch=7, log_end=100),
                                            Replica(3, LIVE, True, True, epoch=7, log_end=90)])
        choose(t, path)
        assert t.chosen == 2, path
        t.rows[1].error = "no answer"   # an ELR member that does not answer is no candidate
        choose(t, path)
        assert t.chosen == 3, path
        for r in t.rows:
            r.in_elr = False            # without ELR: the longest log (highest epoch) as before
        choose(t, path)
        assert t.chosen == 1, path


def test_controllers_alone_through_a_follower(dynamic):
    """Only the quorum's leader answers DescribeQuorum: given a follower's listener alone, the
    shell finds the active controller from the registrations and asks it."""
    sb = dynamic
    follower = next(c for c in sb.controller_ids if c != sb.active_controller)
    only = "{}:{}".format(*sb.address(follower))
    status = ok(shell("--bootstrap-controller", only, "--command", "describe-quorum", "-o", "json"))["status"][0]
    assert status["leader_id"] == sb.active_controller
    features = ok(shell("--bootstrap-controller", only, "--command", "describe-features", "-o", "json"))["features"]
    assert {f["feature"] for f in features} >= {"metadata.version", "kraft.version"}
