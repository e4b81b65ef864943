"""SASL GSSAPI against a real MIT KDC on loopback (tests/kdc.py): the sandbox's server mechanism
(Java's GssKrb5Server as Kafka runs it) with the shell's client (keytab, kinit command, ticket
cache), in-process and over sockets, and what the shell says where librdkafka cannot follow
(confluent-kafka's librdkafka is built without GSSAPI)."""

from __future__ import annotations

import contextlib
import io
import subprocess

import pytest

from kafka_shell.connection.channel import Channel
from kafka_shell.connection.client_config import validate
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.connection.manager import ConnectionManager
from kafka_shell.base.errors import KafkaCallError, UsageError, from_kafka_exception
from kafka_shell.face.main import main
from kafka_shell.sandbox.kerberos import GssapiServer, parse_rules, short_name
from kafka_shell.sandbox.security import SERVER_MECHANISMS, SaslFailure
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.sasl import CLIENT_MECHANISMS
from tests import kdc as kdc_setup
from tests.sasl_broker import SaslTestBroker

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI"


@pytest.fixture(scope="module")
def kdc(tmp_path_factory):
    """A realm with kafka/localhost (the broker) and client (the shell), each with a keytab."""
    k = kdc_setup.start(tmp_path_factory.mktemp("kdc"))
    with pytest.MonkeyPatch.context() as env:
        for name in ("KRB5_CONFIG", "KRB5_KDC_PROFILE", "KRB5RCACHENAME"):
            env.setenv(name, k.env[name])
        env.delenv("KRB5CCNAME", raising=False)
        k.broker_keytab = k.keytab("kafka/localhost")  # type: ignore[attr-defined]
        k.client_keytab = k.keytab("client")  # type: ignore[attr-defined]
        yield k
    k.stop()


def broker_sandbox(kdc, keytab=None, principal: str | None = None) -> Sandbox:
    return Sandbox(brokers=1, kerberos_keytab=str(keytab or kdc.broker_keytab), kerberos_principal=principal)


def client_props(kdc, **extra: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI",
            "sasl.kerberos.keytab": str(kdc.client_keytab), "sasl.kerberos.principal": "client", **extra}


def login(server, props: dict[str, str], host: str = "localhost") -> None:
    """The token exchange the channel makes, in-process; SaslFailure when the broker refuses."""
    client = CLIENT_MECHANISMS["GSSAPI"](props, host)
    token: bytes | None = client.start()
    while token is not None:
        token = client.respond(server.step(token))


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# -- in-process: the GSS exchange and the security layer -------------------------------------------


def test_keytab_login_gives_the_short_principal(kdc):
    server = GssapiServer(broker_sandbox(kdc, principal=f"kafka/localhost@{kdc_setup.REALM}"))
    login(server, client_props(kdc))
    assert server.complete and server.principal == "User:client" and server.lifetime_ms is None


def test_kinit_command_then_the_ticket_cache(kdc):
    command = 'kinit -k -t "%{sasl.kerberos.keytab}" %{sasl.kerberos.principal}'
    server = SERVER_MECHANISMS["GSSAPI"](broker_sandbox(kdc))
    login(server, client_props(kdc, **{"sasl.kerberos.kinit.cmd": command}))
    assert server.principal == "User:client"
    # The cache the command filled serves a login with no keytab at all (the user's kinit).
    again = GssapiServer(broker_sandbox(kdc))
    login(again, {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"})
    assert again.principal == "User:client"


def test_java_clients_jaas_login_works_as_their_keytab_and_principal(kdc):
    jaas = ('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
            f'keyTab="{kdc.client_keytab}" principal="client@{kdc_setup.REALM}";')
    server = GssapiServer(broker_sandbox(kdc))
    login(server, {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI",
                   "sasl.kerberos.service.name": "kafka", "sasl.jaas.config": jaas})
    assert server.principal == "User:client"


def test_default_rule_takes_the_first_component_in_the_default_realm(kdc):
    assert short_name(f"svc/host.example@{kdc_setup.REALM}", kdc_setup.REALM) == "svc"
    assert short_name("plain", kdc_setup.REALM) == "plain"
    with pytest.raises(SaslFailure, match=r"No rules apply to bob@OTHER.REALM, rules \[DEFAULT\]"):
        short_name("bob@OTHER.REALM", kdc_setup.REALM)
    keytab = kdc.keytab("etl/worker1")
    server = GssapiServer(broker_sandbox(kdc))
    login(server, client_props(kdc, **{"sasl.kerberos.keytab": str(keytab), "sasl.kerberos.principal": "etl/worker1"}))
    assert server.principal == "User:etl"


@pytest.mark.parametrize("rules,name,short", [
    (r"RULE:[1:$1@$0](.*@EXAMPLE\.COM)s/@.*//", "alice@EXAMPLE.COM", "alice"),
    (r"RULE:[2:$1](App\..*)s/App\.(.*)/$1/g", "App.service-name/example.com@EXAMPLE.COM", "service-name"),
    (r"RULE:[2:$1;$2](^.*;admin$)s/;admin$//", "joe/admin@EXAMPLE.COM", "joe"),
    (r"RULE:[1:$1]/L", "Alice@OTHER.COM", "alice"),
    (r"RULE:[2:$1](nomatch)s/x/y/,DEFAULT", "svc/h@EXAMPLE.COM", "svc"),
])
def test_principal_to_local_rules_as_kafka_applies_them(rules, name, short):
    assert short_name(name, "EXAMPLE.COM", parse_rules(rules)) == short


def test_rules_that_give_nothing_or_a_non_simple_name_refuse_the_login():
    with pytest.raises(SaslFailure, match=r"No rules apply to bob@OTHER.COM, rules \[RULE:\[1:\$1\]\(x.*\)\]"):
        short_name("bob@OTHER.COM", "EXAMPLE.COM", parse_rules("RULE:[1:$1](x.*)"))
    with pytest.raises(SaslFailure, match="Non-simple name bob@OTHER.COM after auth_to_local rule"):
        short_name("bob@OTHER.COM", "EXAMPLE.COM", parse_rules("RULE:[1:$1@$0]"))
    with pytest.raises(ValueError, match="Invalid rule: NOPE"):
        parse_rules("NOPE")


def test_the_sandboxs_rules_config_names_the_principal(kdc):
    rules = "RULE:[1:$1]/U,DEFAULT"
    server = GssapiServer(Sandbox(brokers=1, kerberos_keytab=str(kdc.broker_keytab),
                                  configs={"sasl.kerberos.principal.to.local.rules": rules}))
    login(server, client_props(kdc))
    assert server.principal == "User:CLIENT"


def test_unknown_service_fails_on_the_client_with_kerberos_reason(kdc):
    with pytest.raises(KafkaCallError) as err:
        login(GssapiServer(broker_sandbox(kdc)), client_props(kdc, **{"sasl.kerberos.service.name": "nokafka"}))
    assert str(err.value).startswith("Kerberos: cannot log in to nokafka@localhost (run kinit, or set "
                                     "sasl.kerberos.keytab and sasl.kerberos.principal): ")
    assert "not found in Kerberos database" in str(err.value)


def test_broker_with_a_stale_key_answers_kafkas_generic_failure(kdc, tmp_path):
    stale = kdc.keytab("kafka/stale.localhost")
    kdc.kadmin(f"ktadd -k {tmp_path / 'new.keytab'} kafka/stale.localhost")  # a new key: the first is stale
    with pytest.raises(SaslFailure) as err:
        login(GssapiServer(broker_sandbox(kdc, keytab=stale)), client_props(kdc), host="stale.localhost")
    assert str(err.value) == GENERIC


def test_a_broker_without_a_kerberos_login_refuses_gssapi_at_the_first_token(kdc):
    server = SERVER_MECHANISMS["GSSAPI"](Sandbox(brokers=1))  # made at SaslHandshake: must not fail there
    with pytest.raises(SaslFailure) as err:
        login(server, client_props(kdc))
    assert str(err.value) == GENERIC


def test_missing_keytab_for_the_client_is_named(kdc, tmp_path):
    props = client_props(kdc, **{"sasl.kerberos.keytab": str(tmp_path / "none.keytab")})
    with pytest.raises(KafkaCallError, match="Kerberos: cannot get tickets for client from keytab"):
        CLIENT_MECHANISMS["GSSAPI"](props, "localhost")


# -- over sockets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])  # the library canonicalizes 127.0.0.1
def test_direct_channel_logs_in_and_serves_requests(kdc, host):
    broker = SaslTestBroker(broker_sandbox(kdc), ["GSSAPI"])
    try:
        ch = Channel(host, broker.port, client_props(kdc), timeout_s=5)
        assert ch.request(ApiKey.METADATA, {"topics": None})["cluster_id"] == "sasl-test"
        ch.close()
    finally:
        broker.close()
    assert broker.principals == ["User:client"]


def test_sasl_without_mechanism_is_gssapi_like_librdkafka(kdc):
    props = {k: v for k, v in client_props(kdc).items() if k != "sasl.mechanism"}
    broker = SaslTestBroker(broker_sandbox(kdc), ["GSSAPI"])
    try:
        Channel("localhost", broker.port, props, timeout_s=5).close()
    finally:
        broker.close()
    assert broker.principals == ["User:client"]


def test_a_failed_login_without_sasl_mechanism_says_gssapi_was_the_default(kdc):
    props = {k: v for k, v in client_props(kdc, **{"sasl.kerberos.service.name": "nokafka"}).items()
             if k != "sasl.mechanism"}
    with pytest.raises(KafkaCallError) as err:
        CLIENT_MECHANISMS["GSSAPI"](props, "localhost").start()
    assert len(str(err.value).splitlines()) == 1
    assert str(err.value).endswith(". sasl.mechanism is not set, and GSSAPI is librdkafka's default: "
                                   "set it if you meant PLAIN, SCRAM or OAUTHBEARER")


def test_broker_refusal_reaches_the_user_as_one_line(kdc):
    elsewhere = kdc.keytab("kafka/elsewhere.localhost")  # the broker has no key for kafka/localhost
    broker = SaslTestBroker(broker_sandbox(kdc, keytab=elsewhere), ["GSSAPI"])
    try:
        with pytest.raises(KafkaCallError) as err:
            Channel("localhost", broker.port, client_props(kdc), timeout_s=5)
    finally:
        broker.close()
    assert err.value.code == Error.sasl_authentication_failed
    assert str(err.value) == f"SASL authentication with localhost:{broker.port} failed: {GENERIC}"


# -- librdkafka has no GSSAPI here: what the shell checks and says ---------------------------------


def test_gssapi_settings_pass_the_start_checks_and_others_are_still_checked(kdc):
    validate(client_props(kdc))  # librdkafka lacks GSSAPI: the rest is checked without it
    with pytest.raises(UsageError, match='Invalid client setting: Invalid value for configuration property "socket.timeout.ms"'):
        validate(client_props(kdc, **{"socket.timeout.ms": "soon"}))


def test_librdkafka_consumers_and_producers_say_the_same(kdc):
    from confluent_kafka import Consumer, KafkaException
    conn = ConnectionManager("localhost:1", client_props(kdc), timeout_s=2)
    with pytest.raises(KafkaException) as err:
        Consumer({**conn.client_config(), "group.id": "g"})
    conn.close()
    assert str(from_kafka_exception(err.value)).startswith(
        "This command uses librdkafka (confluent-kafka), which cannot log in with SASL GSSAPI: the installed build lacks it")


def test_kinit_command_runs_through_the_shell_like_librdkafka(kdc, tmp_path):
    marker = tmp_path / "ran"
    command = f'touch {marker} && kinit -k -t "%{{sasl.kerberos.keytab}}" %{{sasl.kerberos.principal}}'
    login(GssapiServer(broker_sandbox(kdc)), client_props(kdc, **{"sasl.kerberos.kinit.cmd": command}))
    assert marker.exists()
    assert subprocess.run(["klist"], env=kdc.env, capture_output=True, text=True).stdout.count("client@") == 1


# -- the shell against a sandbox SASL listener -----------------------------------------------------


def test_shell_commands_over_a_sandbox_gssapi_listener(kdc, tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path / "config"))
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], sasl_mechanisms=["GSSAPI"],  # type: ignore[call-arg]
                 kerberos_keytab=str(kdc.broker_keytab)) as s:
        config = tmp_path / "client.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in client_props(kdc).items()))
        config.chmod(0o600)
        base = ["--bootstrap-server", s.bootstrap_for("SASL_PLAINTEXT"), "--command-config", str(config)]  # type: ignore[attr-defined]
        code, out, err = run(*base, "--command", "describe-cluster")
        assert code == 0, err
        code, out, err = run(*base, "--command", "list-topics")
        assert code == 0, err
        # Every admin request goes over the shell's own channel, which logs in with GSSAPI itself.
        code, out, err = run(*base, "--command", "create-topic --topic t")
        assert code == 0 and "Created topic t." in err, err
        code, out, err = run(*base, "--command", "describe-configs --topic t -o json")
        assert code == 0, err
