"""SASL OAUTHBEARER on both sides: the sandbox's server mechanism (Kafka's unsecured validator,
and signed tokens against a JWKS) with the shell's client (unsecured tokens as librdkafka builds
them, OIDC client credentials from a token endpoint on loopback), in-process and over sockets,
and with librdkafka's own OAUTHBEARER client (confluent-kafka) against the same server code."""

from __future__ import annotations

import contextlib
import io
import json
import time

import pytest
from confluent_kafka.admin import AdminClient

from kafka_shell.base import jwt
from kafka_shell.connection.channel import Channel
from kafka_shell.connection.client_config import librdkafka_properties, validate
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.errors import KafkaCallError, UsageError
from kafka_shell.face.main import main
from kafka_shell.sandbox.oauthbearer import OAuthBearerServer
from kafka_shell.sandbox.security import SERVER_MECHANISMS, SaslFailure
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.sasl import CLIENT_MECHANISMS
from kafka_shell.connection.sasl_oauthbearer import client_first_message, unsecured_from_config
from tests.oauth_tokens import SigningKey, TokenEndpoint
from tests.sasl_broker import SaslTestBroker

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
UNSECURED = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
             "sasl.oauthbearer.config": "principal=alice"}


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey()


def login(server: OAuthBearerServer, props: dict[str, str]) -> None:
    """The token exchange the channel makes, in-process; SaslFailure when refused."""
    client = CLIENT_MECHANISMS["OAUTHBEARER"](props, "localhost")
    token: bytes | None = client.start()
    while token is not None:
        token = client.respond(server.step(token))


def unsecured_sandbox(**options: str) -> Sandbox:
    return Sandbox(brokers=1, oauth_options=options)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# -- the client's message and tokens ---------------------------------------------------------------


def test_client_first_message_is_rfc7628_as_kafka_and_librdkafka_write_it():
    assert client_first_message("t.o.k", {"traceId": "123"}) == b"n,,\x01auth=Bearer t.o.k\x01traceId=123\x01\x01"
    assert client_first_message("abc") == b"n,,\x01auth=Bearer abc\x01\x01"


def test_unsecured_token_as_librdkafka_builds_it():
    token, extensions = unsecured_from_config("principal=alice scope=read,write,read lifeSeconds=60 extension_traceId=7")
    header, claims, signature = jwt.split(token)
    assert header == {"alg": "none"} and signature == "" and extensions == {"traceId": "7"}
    assert claims["sub"] == "alice" and claims["scope"] == ["read", "write"]
    assert claims["exp"] - claims["iat"] == pytest.approx(60)


@pytest.mark.parametrize("config,message", [
    ("", "SASL OAUTHBEARER needs sasl.oauthbearer.config with principal=NAME"),
    ("scope=a", "Invalid sasl.oauthbearer.config: no principal=<value>"),
    ("principal=alice colour=blue", "Unrecognized sasl.oauthbearer.config beginning at: colour=blue"),
    ("principal=al\"ice", "Invalid sasl.oauthbearer.config: '\"' cannot appear in principal"),
    ("principal=alice lifeSeconds=soon", "Invalid sasl.oauthbearer.config: lifeSeconds must be a positive whole number"),
])
def test_bad_unsecured_config_is_one_usage_line(config, message):
    with pytest.raises(UsageError) as err:
        unsecured_from_config(config)
    assert str(err.value).startswith(message)


# -- the unsecured validator (Kafka's default) -----------------------------------------------------


def test_unsecured_login_gives_the_sub_principal_and_the_token_expiry():
    server = OAuthBearerServer(unsecured_sandbox())
    before = time.time()
    login(server, {**UNSECURED, "sasl.oauthbearer.config": "principal=alice lifeSeconds=120"})
    assert server.complete and server.principal == "User:alice"
    assert server.lifetime_ms is not None and (before + 119) * 1000 < server.lifetime_ms < (time.time() + 121) * 1000


def test_principal_claim_name_is_the_validators_option():
    server = OAuthBearerServer(unsecured_sandbox(unsecuredValidatorPrincipalClaimName="azp"))
    login(server, {**UNSECURED, "sasl.oauthbearer.config": "principalClaimName=azp principal=svc"})
    assert server.principal == "User:svc"


def refused(server: OAuthBearerServer, token: str) -> str:
    """Kafka's two steps for a refused token: the JSON error as a challenge, then (after the
    client's %x01) the failure with that JSON as its message."""
    challenge = server.step(client_first_message(token))
    with pytest.raises(SaslFailure) as err:
        server.step(b"\x01")
    assert str(err.value) == challenge.decode() and not server.complete
    return str(err.value)


def raw_token(header: dict, claims: dict, signature: str = "") -> str:
    return f"{jwt.encode_part(header)}.{jwt.encode_part(claims)}.{signature}"


@pytest.mark.parametrize("header,claims", [   # times in seconds from now, made when the test runs
    ({"alg": "none"}, {"sub": "alice", "iat": -20, "exp": -10}),    # expired
    ({"alg": "none"}, {"sub": "alice", "iat": 60, "exp": 600}),     # issued in the future
    ({"alg": "none"}, {"sub": "alice", "iat": 0}),                  # no exp
    ({"alg": "none"}, {"iat": 0, "exp": 60}),                       # no principal
    ({"alg": "none"}, {"sub": "alice", "exp": "tomorrow"}),         # exp not a number
    ({"alg": "HS256"}, {"sub": "alice", "exp": 60}),                # not unsecured
])
def test_tokens_kafka_refuses_get_invalid_token(header, claims):
    now = time.time()
    claims = {k: now + v if k in ("iat", "exp") and isinstance(v, int) else v for k, v in claims.items()}
    assert refused(OAuthBearerServer(unsecured_sandbox()), raw_token(header, claims)) == '{"status":"invalid_token"}'


def test_a_signature_on_an_unsecured_token_is_refused():
    token = raw_token({"alg": "none"}, {"sub": "alice", "exp": time.time() + 60}, "c2ln")
    assert refused(OAuthBearerServer(unsecured_sandbox()), token) == '{"status":"invalid_token"}'


def test_base64url_characters_fail_as_on_a_real_broker():
    # Kafka decodes the parts with Java's basic Base64 decoder: a claims part holding "-" or "_"
    # (here from the "?>" bytes) is malformed there, however the client encoded it.
    token = raw_token({"alg": "none"}, {"sub": "a??>", "exp": time.time() + 600})
    assert "-" in token.split(".")[1] or "_" in token.split(".")[1]
    assert refused(OAuthBearerServer(unsecured_sandbox()), token) == '{"status":"invalid_token"}'


def test_missing_required_scope_is_insufficient_scope_with_kafkas_spacing():
    server = OAuthBearerServer(unsecured_sandbox(unsecuredValidatorRequiredScope="kafka admin"))
    token, _ = unsecured_from_config("principal=alice scope=kafka")
    assert refused(server, token) == '{"status":"insufficient_scope", "scope":"[kafka, admin]"}'
    ok = OAuthBearerServer(unsecured_sandbox(unsecuredValidatorRequiredScope="kafka admin"))
    login(ok, {**UNSECURED, "sasl.oauthbearer.config": "principal=alice scope=admin,kafka"})
    assert ok.principal == "User:alice"


def test_clock_skew_option_lets_a_just_expired_token_in():
    token = raw_token({"alg": "none"}, {"sub": "alice", "iat": time.time() - 30, "exp": time.time() - 5})
    server = OAuthBearerServer(unsecured_sandbox(unsecuredValidatorAllowableClockSkewMs="60000"))
    assert server.step(client_first_message(token)) == b"" and server.principal == "User:alice"


@pytest.mark.parametrize("message", [
    b"n,,auth=Bearer abc\x01\x01",                 # no kvsep after the GS2 header
    b"n,,\x01auth=Bearer abc\x01",                 # no final kvsep
    b"n,,\x01auth=Basic abc\x01\x01",              # not a bearer token
    b"n,,\x01token=abc\x01\x01",                   # no auth
    b"\x01",                                        # %x01 with no error pending
])
def test_malformed_client_messages_get_kafkas_generic_failure(message):
    with pytest.raises(SaslFailure) as err:
        OAuthBearerServer(unsecured_sandbox()).step(message)
    assert str(err.value) == GENERIC


def test_authorization_id_must_be_the_tokens_principal():
    token, _ = unsecured_from_config("principal=alice")
    server = OAuthBearerServer(unsecured_sandbox())
    with pytest.raises(SaslFailure) as err:
        server.step(f"n,a=bob,\x01auth=Bearer {token}\x01\x01".encode())
    assert str(err.value) == ("Authentication failed: Client requested an authorization id (bob) that is "
                              "different from the token's principal name (alice)")
    same = OAuthBearerServer(unsecured_sandbox())
    assert same.step(f"n,a=alice,\x01auth=Bearer {token}\x01\x01".encode()) == b"" and same.complete


# -- signed tokens against a JWKS ------------------------------------------------------------------


def signed_server(key: SigningKey, **options: str) -> OAuthBearerServer:
    return OAuthBearerServer(Sandbox(brokers=1, oauth_jwks=key.jwks(), oauth_options=options))


def test_signed_token_logs_in_with_its_subject_and_expiry(key):
    server = signed_server(key)
    token = key.token(sub="bob", life_s=300)
    assert server.step(client_first_message(token)) == b""
    assert server.principal == "User:bob" and server.lifetime_ms == jwt.split(token)[1]["exp"] * 1000


def test_jwks_file_works_like_the_dict(key, tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(key.jwks()))
    server = OAuthBearerServer(Sandbox(brokers=1, oauth_jwks=str(path)))
    assert server.step(client_first_message(key.token())) == b"" and server.complete


def test_signed_tokens_kafka_refuses(key):
    other = SigningKey(kid=key.kid)
    unsecured, _ = unsecured_from_config("principal=bob")
    cases = [other.token(),                                     # signed by another key
             unsecured,                                         # alg none with a JWKS
             key.token(life_s=-60),                             # expired past the 30 s skew
             key.token(aud="someone"),                          # aud with no expected audience
             key.token(sub=""),                                 # no subject
             key.token()[:-4] + "AAAA"]                         # signature altered
    for token in cases:
        assert refused(signed_server(key), token) == '{"status":"invalid_token"}', token


def test_expected_audience_and_issuer(key):
    options = {"sasl.oauthbearer.expected.audience": "kafka,other", "sasl.oauthbearer.expected.issuer": "https://idp"}
    assert refused(signed_server(key, **options), key.token(aud="elsewhere", iss="https://idp")) == '{"status":"invalid_token"}'
    assert refused(signed_server(key, **options), key.token(aud="kafka", iss="https://evil")) == '{"status":"invalid_token"}'
    server = signed_server(key, **options)
    assert server.step(client_first_message(key.token(aud=["kafka"], iss="https://idp"))) == b""
    assert server.principal == "User:bob"


@pytest.mark.parametrize("settings,message", [
    ({"oauth_jwks": {"no": "keys"}}, 'oauth_jwks is a JWK set'),
    ({"oauth_options": {"unsecuredValidatorAllowableClockSkewMs": "-1"}}, "must not be negative"),
])
def test_bad_oauth_settings_fail_when_the_sandbox_is_made(settings, message):
    with pytest.raises(ValueError, match=message):
        Sandbox(brokers=1, **settings)


def test_registered_as_the_sandbox_mechanism():
    server = SERVER_MECHANISMS["OAUTHBEARER"](unsecured_sandbox())
    login(server, UNSECURED)  # type: ignore[arg-type]
    assert server.principal == "User:alice"


# -- over sockets: the direct channel and librdkafka -----------------------------------------------


@pytest.fixture
def endpoint(key):
    e = TokenEndpoint(key, {"shell-client": "s3cret-value"})
    yield e
    e.close()


def oidc(endpoint: TokenEndpoint, secret: str = "s3cret-value") -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": endpoint.url,
            "sasl.oauthbearer.client.id": "shell-client", "sasl.oauthbearer.client.secret": secret,
            "sasl.oauthbearer.scope": "kafka"}


def test_direct_channel_logs_in_with_an_unsecured_token():
    broker = SaslTestBroker(unsecured_sandbox(), ["OAUTHBEARER"])
    try:
        ch = Channel("127.0.0.1", broker.port, UNSECURED, timeout_s=5)
        assert ch.request(ApiKey.METADATA, {"topics": None})["cluster_id"] == "sasl-test"
        ch.close()
    finally:
        broker.close()
    assert broker.principals == ["User:alice"]


def test_direct_channel_fetches_an_oidc_token_and_the_broker_checks_it(key, endpoint):
    broker = SaslTestBroker(Sandbox(brokers=1, oauth_jwks=key.jwks()), ["OAUTHBEARER"])
    try:
        Channel("127.0.0.1", broker.port, oidc(endpoint), timeout_s=5).close()
    finally:
        broker.close()
    assert broker.principals == ["User:shell-client"]
    assert endpoint.requests[-1]["form"] == {"grant_type": "client_credentials", "scope": "kafka"}


def test_refused_token_fails_with_kafkas_json_message():
    broker = SaslTestBroker(unsecured_sandbox(unsecuredValidatorRequiredScope="kafka"), ["OAUTHBEARER"])
    try:
        with pytest.raises(KafkaCallError) as err:
            Channel("127.0.0.1", broker.port, UNSECURED, timeout_s=5)
    finally:
        broker.close()
    assert err.value.code == Error.sasl_authentication_failed
    assert str(err.value) == (f"SASL authentication with 127.0.0.1:{broker.port} failed: "
                              '{"status":"insufficient_scope", "scope":"[kafka]"}')


def test_token_endpoint_refusal_is_one_line_without_the_secret(endpoint):
    with pytest.raises(KafkaCallError) as err:
        CLIENT_MECHANISMS["OAUTHBEARER"](oidc(endpoint, secret="wrong-secret"), "localhost")
    assert str(err.value) == (f"Cannot get an OAUTHBEARER token: the OIDC token endpoint {endpoint.url} answered "
                              "HTTP 401 (Unauthorized): check sasl.oauthbearer.client.id and .client.secret")
    assert "wrong-secret" not in str(err.value)


@pytest.mark.parametrize("method", ["unsecured", "oidc"])
def test_librdkafka_logs_in_to_the_sandbox_mechanism(key, endpoint, method):
    """confluent-kafka's own OAUTHBEARER client against the sandbox's server code."""
    if method == "oidc":
        sandbox, props = Sandbox(brokers=1, oauth_jwks=key.jwks()), oidc(endpoint)
    else:
        sandbox, props = unsecured_sandbox(), {**UNSECURED, "enable.sasl.oauthbearer.unsecure.jwt": "true"}
    broker = SaslTestBroker(sandbox, ["OAUTHBEARER"])
    try:
        admin = AdminClient({"bootstrap.servers": broker.address, **props, "log_level": 3})
        assert admin.list_topics(timeout=10).cluster_id == "sasl-test"
    finally:
        broker.close()
    assert broker.principals and set(broker.principals) == {"User:shell-client" if method == "oidc" else "User:alice"}


# -- the shell against a sandbox SASL listener -----------------------------------------------------


@pytest.mark.parametrize("method", ["unsecured", "oidc"])
def test_shell_commands_over_a_sandbox_oauthbearer_listener(key, endpoint, method, tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SHELL_CONFIG_DIR", str(tmp_path / "config"))
    props = oidc(endpoint) if method == "oidc" else UNSECURED
    jwks = key.jwks() if method == "oidc" else None
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], sasl_mechanisms=["OAUTHBEARER"],  # type: ignore[call-arg]
                 oauth_jwks=jwks) as s:
        config = tmp_path / "client.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        config.chmod(0o600)
        base = ["--bootstrap-server", s.bootstrap_for("SASL_PLAINTEXT"), "--command-config", str(config)]  # type: ignore[attr-defined]
        code, out, err = run(*base, "--command", "create-topic --topic paid --partitions 2")
        assert (code, err.strip()) == (0, "Created topic paid.")
        code, out, err = run(*base, "--command", "list-topics")
        assert code == 0 and "paid" in out, err
        code, out, err = run(*base, "--command", "describe-cluster")
        assert code == 0, err


def test_a_session_ends_with_its_token_and_the_channel_logs_in_again():
    """Kafka caps an OAUTHBEARER session at the token's expiry (KIP-368); the direct channel logs
    in again, with a new token, before it ends."""
    props = {**UNSECURED, "sasl.oauthbearer.config": "principal=alice lifeSeconds=2"}
    with Sandbox(brokers=1, listeners=["SASL_PLAINTEXT"], sasl_mechanisms=["OAUTHBEARER"]) as s:  # type: ignore[call-arg]
        host, port = s.bootstrap_for("SASL_PLAINTEXT").split(",")[0].rsplit(":", 1)  # type: ignore[attr-defined]
        ch = Channel(host, int(port), props, timeout_s=5)
        try:
            time.sleep(2.5)  # past the first token's expiry
            assert ch.request(ApiKey.METADATA, {"topics": None})["brokers"]
        finally:
            ch.close()


# -- a Java client's properties --------------------------------------------------------------------

JAVA_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"


def test_java_unsecured_login_options_become_librdkafkas():
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
             "sasl.jaas.config": f'{JAVA_MODULE} unsecuredLoginStringClaim_sub="alice" '
                                 'unsecuredLoginListClaim_scope=",kafka,admin" unsecuredLoginLifetimeSeconds="600" '
                                 'unsecuredLoginExtension_traceId="42";'}
    out = librdkafka_properties(props)
    assert out["sasl.oauthbearer.config"] == "principal=alice scope=kafka,admin lifeSeconds=600 extension_traceId=42"
    assert "sasl.jaas.config" not in out and out["enable.sasl.oauthbearer.unsecure.jwt"] == "true"
    server = OAuthBearerServer(unsecured_sandbox(unsecuredValidatorRequiredScope="admin"))
    login(server, props)  # the direct channel's client reads the same options
    assert server.principal == "User:alice"


def test_java_oidc_client_properties_work_for_the_channel_and_librdkafka(key, endpoint):
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
             "sasl.oauthbearer.token.endpoint.url": endpoint.url,
             "sasl.login.callback.handler.class":
                 "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
             "sasl.jaas.config": f'{JAVA_MODULE} clientId="shell-client" clientSecret="s3cret-value" scope="kafka";'}
    validate(props)  # librdkafka takes the translated settings (no Java-only key is left)
    broker = SaslTestBroker(Sandbox(brokers=1, oauth_jwks=key.jwks()), ["OAUTHBEARER"])
    try:
        Channel("127.0.0.1", broker.port, props, timeout_s=5).close()
        admin = AdminClient({"bootstrap.servers": broker.address, **librdkafka_properties(props), "log_level": 3})
        assert admin.list_topics(timeout=10).cluster_id == "sasl-test"
    finally:
        broker.close()
    assert set(broker.principals) == {"User:shell-client"} and len(broker.principals) >= 2
