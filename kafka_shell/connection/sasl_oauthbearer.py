"""The client side of SASL OAUTHBEARER (RFC 7628, KIP-255) for the direct channel, with the
tokens librdkafka gets from the same properties:

- `sasl.oauthbearer.method=default` (librdkafka's default): an unsecured JWS built from
  `sasl.oauthbearer.config` ("principal=alice scope=a,b lifeSeconds=600 extension_k=v"), as
  librdkafka's default token refresh does; only brokers that accept unsecured tokens take it.
- a Java client's OAuthBearerLoginModule `sasl.jaas.config` works as the same librdkafka
  properties (`from_java_login`).
- `sasl.oauthbearer.method=oidc`: a token fetched from `sasl.oauthbearer.token.endpoint.url`
  with the client-credentials grant (`sasl.oauthbearer.client.id` / `.client.secret` in a Basic
  header, `sasl.oauthbearer.scope`), kept for this process until 80% of its lifetime has passed,
  as librdkafka refreshes it. Extensions come from `sasl.oauthbearer.extensions` ("k=v,k2=v2").

The client's one message is the GS2 header and key-value pairs Kafka's OAuthBearerSaslServer
parses. A broker that refuses the token answers with a JSON error; the client then sends a
lone %x01 and the broker fails the login with that JSON as its message (RFC 7628 3.2.3).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from kafka_shell.base import jwt
from kafka_shell.base.errors import KafkaCallError, UsageError, shown

SEPARATOR = "\x01"
EXTENSION_KEY = re.compile(r"[A-Za-z]+")
EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")
TOKEN_FETCH_TIMEOUT_S = 10.0
REFRESH_AT = 0.8  # of a fetched token's lifetime, as librdkafka refreshes
_UNSECURED_KEYS = ("principalClaimName", "principal", "scopeClaimName", "scope", "lifeSeconds")


def client_first_message(token: str, extensions: dict[str, str] | None = None) -> bytes:
    """`n,,` kvsep `auth=Bearer <token>` kvsep *(key=value kvsep) kvsep (RFC 7628 3.1)."""
    for key, value in (extensions or {}).items():
        if key == "auth" or not EXTENSION_KEY.fullmatch(key):
            raise UsageError(f"OAUTHBEARER extension name {shown(key)} is invalid: use letters only")
        if not EXTENSION_VALUE.fullmatch(value):
            raise UsageError(f"OAUTHBEARER extension {key} has an invalid value: use printable ASCII")
    pairs = "".join(f"{SEPARATOR}{k}={v}" for k, v in (extensions or {}).items())
    return f"n,,{SEPARATOR}auth=Bearer {token}{pairs}{SEPARATOR}{SEPARATOR}".encode()


def from_java_login(props: dict[str, str]) -> dict[str, str]:
    """librdkafka's OAUTHBEARER properties from a Java client's: OAuthBearerLoginModule options
    in `sasl.jaas.config` (clientId, clientSecret, scope and extension_NAME with
    `sasl.oauthbearer.token.endpoint.url`: OIDC; unsecuredLogin* options: an unsecured token) where
    librdkafka's own keys are not set, without the Java-only `sasl.login.*` keys."""
    jaas = props.get("sasl.jaas.config", "")
    if "OAuthBearerLoginModule" not in jaas:
        return props
    from kafka_shell.connection.client_config import jaas_options
    options = jaas_options(jaas)
    java: dict[str, str] = {}
    extensions = {k.removeprefix("extension_"): v for k, v in options.items() if k.startswith("extension_")}
    if "clientId" in options and props.get("sasl.oauthbearer.token.endpoint.url"):
        java = {"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": options["clientId"],
                "sasl.oauthbearer.client.secret": options.get("clientSecret", ""),
                **({"sasl.oauthbearer.scope": options["scope"]} if options.get("scope") else {}),
                **({"sasl.oauthbearer.extensions": ",".join(f"{k}={v}" for k, v in extensions.items())}
                   if extensions else {})}
    elif any(k.startswith("unsecuredLogin") for k in options):
        java = {"sasl.oauthbearer.config": _unsecured_config(options)}
    kept = {k: v for k, v in props.items() if not k.startswith("sasl.login.") and k != "sasl.jaas.config"}
    return {**java, **kept}


def _unsecured_config(options: dict[str, str]) -> str:
    """`sasl.oauthbearer.config` from OAuthBearerUnsecuredLoginCallbackHandler's options."""
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
    scope_claim = options.get("unsecuredLoginScopeClaimName", "scope")
    items = [f"principal={options.get(f'unsecuredLoginStringClaim_{principal_claim}', '')}"]
    if principal_claim != "sub":
        items.append(f"principalClaimName={principal_claim}")
    scope = options.get(f"unsecuredLoginListClaim_{scope_claim}") or options.get(f"unsecuredLoginStringClaim_{scope_claim}")
    if scope:  # a list claim's first character is its separator (",a,b")
        values = scope[1:].split(scope[0]) if f"unsecuredLoginListClaim_{scope_claim}" in options else [scope]
        items += [f"scopeClaimName={scope_claim}"] * (scope_claim != "scope") + [f"scope={','.join(v for v in values if v)}"]
    if "unsecuredLoginLifetimeSeconds" in options:
        items.append(f"lifeSeconds={options['unsecuredLoginLifetimeSeconds']}")
    items += [f"extension_{k.removeprefix('unsecuredLoginExtension_')}={v}" for k, v in options.items()
              if k.startswith("unsecuredLoginExtension_")]
    return " ".join(items)


class OAuthBearerClient:
    def __init__(self, props: dict[str, str], host: str):
        props = from_java_login(props)
        method = props.get("sasl.oauthbearer.method", "default").strip().lower()
        if method == "oidc":
            token, extensions = fetched_token(props), _extension_list(props.get("sasl.oauthbearer.extensions", ""))
        elif method == "default":
            token, extensions = unsecured_from_config(props.get("sasl.oauthbearer.config", ""))
        else:
            raise UsageError(f"sasl.oauthbearer.method {shown(method)} is unknown: use default or oidc")
        self._message = client_first_message(token, extensions)

    def start(self) -> bytes:
        return self._message

    def respond(self, challenge: bytes) -> bytes | None:
        # An empty answer: logged in. Otherwise the broker's JSON error, which it sends back as
        # the failure message once we acknowledge it with %x01.
        return SEPARATOR.encode() if challenge else None


# -- unsecured tokens (librdkafka's default refresh) ---------------------------------------------


def unsecured_from_config(config: str) -> tuple[str, dict[str, str]]:
    """The token and extensions librdkafka builds from `sasl.oauthbearer.config`."""
    if not config.strip():
        raise UsageError("SASL OAUTHBEARER needs sasl.oauthbearer.config with principal=NAME "
                         "(an unsecured token), or sasl.oauthbearer.method=oidc")
    values: dict[str, str] = {}
    extensions: dict[str, str] = {}
    for item in config.split():
        key, sep, value = item.partition("=")
        if key.startswith("extension_") and sep:
            extensions[key.removeprefix("extension_")] = value
        elif key in _UNSECURED_KEYS and sep:
            if not value:
                raise UsageError(f"Invalid sasl.oauthbearer.config: empty '{key}='")
            values[key] = value
        else:
            raise UsageError(f"Unrecognized sasl.oauthbearer.config beginning at: {shown(item)}")
    if "principal" not in values:
        raise UsageError("Invalid sasl.oauthbearer.config: no principal=<value>")
    bad = next((k for k, v in values.items() if '"' in v), None)
    if bad:
        raise UsageError(f"Invalid sasl.oauthbearer.config: '\"' cannot appear in {bad}")
    life = values.get("lifeSeconds", "3600")
    if not life.isdigit() or not 0 < int(life) <= 2**31 - 1:
        raise UsageError(f"Invalid sasl.oauthbearer.config: lifeSeconds must be a positive whole number, got {shown(life)}")
    scope = [s for s in values.get("scope", "").split(",") if s]
    token = jwt.unsecured_token(values["principal"], values.get("principalClaimName", "sub"),
                                values.get("scopeClaimName", "scope"), scope, int(life))
    return token, extensions


def _extension_list(text: str) -> dict[str, str]:
    pairs = [p for p in text.split(",") if p.strip()]
    if any("=" not in p for p in pairs):
        raise UsageError("sasl.oauthbearer.extensions takes key=value pairs separated by commas")
    return dict(p.strip().split("=", 1) for p in pairs)


# -- OIDC client credentials ---------------------------------------------------------------------

_tokens: dict[tuple[str, ...], tuple[str, float]] = {}   # request -> (token, refresh after)
_tokens_lock = threading.Lock()


def fetched_token(props: dict[str, str]) -> str:
    url = props.get("sasl.oauthbearer.token.endpoint.url", "")
    client_id = props.get("sasl.oauthbearer.client.id", "")
    secret = props.get("sasl.oauthbearer.client.secret", "")
    grant = props.get("sasl.oauthbearer.grant.type", "client_credentials")
    if grant != "client_credentials":
        raise UsageError(f"kafka-shell fetches OIDC tokens with the client_credentials grant only, "
                         f"not {shown(grant)}: unset sasl.oauthbearer.grant.type")
    if not (url and client_id and secret):
        raise UsageError("sasl.oauthbearer.method=oidc needs sasl.oauthbearer.token.endpoint.url, "
                         "sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret")
    scope = props.get("sasl.oauthbearer.scope", "")
    sub_claim = props.get("sasl.oauthbearer.sub.claim.name", "sub")
    key = (url, client_id, secret, scope, sub_claim)
    with _tokens_lock:  # one fetch at a time: the channels to several brokers share its token
        cached = _tokens.get(key)
        if cached is not None and time.time() < cached[1]:
            return cached[0]
        token, expires = _fetch(url, client_id, secret, scope, sub_claim)
        now = time.time()
        _tokens[key] = (token, now + REFRESH_AT * max(expires - now, 0.0))
        return token


def _fetch(url: str, client_id: str, secret: str, scope: str, sub_claim: str) -> tuple[str, float]:
    """POST the client-credentials grant as librdkafka does; (token, exp in seconds)."""
    body = {"grant_type": "client_credentials", **({"scope": scope} if scope else {})}
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    request = urllib.request.Request(url, data=urllib.parse.urlencode(body).encode(), method="POST", headers={
        "Accept": "application/json", "Authorization": f"Basic {basic}",
        "Content-Type": "application/x-www-form-urlencoded"})
    where = f"the OIDC token endpoint {shown(url)}"
    try:
        with urllib.request.urlopen(request, timeout=TOKEN_FETCH_TIMEOUT_S) as answer:
            data = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        raise KafkaCallError(f"Cannot get an OAUTHBEARER token: {where} answered HTTP {exc.code} "
                             f"({exc.reason}): check sasl.oauthbearer.client.id and .client.secret") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise KafkaCallError(f"Cannot get an OAUTHBEARER token from {where}: {reason}") from None
    except ValueError:
        raise KafkaCallError(f"Cannot get an OAUTHBEARER token: {where} did not answer JSON") from None
    problem = "it has no access_token"
    for field in ("access_token", "id_token"):  # librdkafka falls back to id_token too
        token = data.get(field) if isinstance(data, dict) else None
        if isinstance(token, str):
            try:
                _, claims, _ = jwt.split(token)
            except jwt.MalformedToken as exc:
                problem = f"its {field} is not a JWT ({exc})"
                continue
            exp, sub = claims.get("exp"), claims.get(sub_claim)
            if not isinstance(exp, int | float) or exp <= 0:
                problem = f'its {field} has no valid "exp" claim'
            elif not isinstance(sub, str) or not sub:
                problem = f'its {field} has no "{sub_claim}" claim (sasl.oauthbearer.sub.claim.name)'
            else:
                return token, float(exp)
    raise KafkaCallError(f"Cannot use the token from {where}: {problem}")
