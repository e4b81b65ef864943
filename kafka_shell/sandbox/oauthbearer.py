"""The broker side of SASL OAUTHBEARER, as Kafka's OAuthBearerSaslServer with its two validators.

- Without `Sandbox(oauth_jwks=...)`: Kafka's default, OAuthBearerUnsecuredValidatorCallbackHandler,
  which takes unsecured JWS tokens (`alg` none, empty signature) and checks the principal claim,
  `iat`, `exp` (JAAS option unsecuredValidatorAllowableClockSkewMs, default 0), their order, and
  unsecuredValidatorRequiredScope.
- With a JWKS (a dict or a JSON file): OAuthBearerValidatorCallbackHandler, which takes only
  signed tokens (RS256/384/512, checked against the key named by `kid`) and checks `exp`, `iat`,
  `nbf`, `aud` and `iss` as jose4j does (sasl.oauthbearer.clock.skew.seconds, default 30;
  .expected.audience, .expected.issuer, .sub.claim.name, .scope.claim.name).

Options come from `Sandbox(oauth_options={...})` under Kafka's names. A refused token is
answered with Kafka's JSON error ({"status":"invalid_token"}); when the client acknowledges it
(%x01) the login fails with that JSON as the message. A malformed client message fails with
Kafka's generic message. The principal is "User:" + the token's principal claim; `lifetime_ms`
is the token's expiry (ms since the epoch, Kafka's OAuthBearerToken.lifetimeMs).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_shell.base import jwt
from kafka_shell.sandbox.security import SaslFailure, invalid_credentials

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox

MECHANISM = "OAUTHBEARER"
SEPARATOR = "\x01"
log = logging.getLogger("kafka_shell.sandbox.oauthbearer")

# OAuthBearerClientInitialResponse's grammar (RFC 7628 3.1).
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7E \t\r\n]+"
_CLIENT_FIRST = re.compile(f"n,(?:a=(?P<authzid>{_SASLNAME}))?,{SEPARATOR}"
                           f"(?P<kvpairs>(?:{_KEY}={_VALUE}{SEPARATOR})*){SEPARATOR}")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_SCOPE_ITEM = re.compile(r"[\x23-\x5B\x5D-\x7E\x21]+")
_RSA_HASHES = {"RS256": "SHA256", "RS384": "SHA384", "RS512": "SHA512"}


class InvalidToken(Exception):
    """A token the validator refuses; `scope` is set when only the scope falls short."""

    def __init__(self, reason: str, scope: str | None = None):
        super().__init__(reason)
        self.scope = scope


class Token:
    def __init__(self, principal: str, lifetime_ms: int):
        self.principal, self.lifetime_ms = principal, lifetime_ms


def validator(jwks: Mapping[str, Any] | str | Path | None, options: Mapping[str, str]) -> UnsecuredValidator | SignedValidator:
    """The validator Kafka's broker would run with these settings; ValueError for bad ones (the
    sandbox checks them when it is made)."""
    return SignedValidator(jwks, options) if jwks is not None else UnsecuredValidator(options)


class OAuthBearerServer:
    def __init__(self, sandbox: Sandbox):
        self._validate = validator(sandbox.oauth_jwks, sandbox.oauth_options).validate
        self.complete = False
        self.principal = ""
        self.lifetime_ms: int | None = None
        self._error: str | None = None

    def step(self, token: bytes) -> bytes:
        if token == SEPARATOR.encode() and self._error is not None:
            raise SaslFailure(self._error)  # the client acknowledged our error
        self._error = None
        value, authzid = parse_client_first(token)
        try:
            checked = self._validate(value)
        except InvalidToken as exc:
            log.debug("OAUTHBEARER token refused: %s", exc)
            self._error = error_json("insufficient_scope" if exc.scope is not None else "invalid_token", exc.scope)
            return self._error.encode()
        if authzid and authzid != checked.principal:
            raise SaslFailure(f"Authentication failed: Client requested an authorization id ({authzid}) that "
                              f"is different from the token's principal name ({checked.principal})")
        self.principal = f"User:{checked.principal}"
        self.lifetime_ms = checked.lifetime_ms
        self.complete = True
        return b""


def parse_client_first(message: bytes) -> tuple[str, str]:
    """(token, authorization id) from the client's first message, as Kafka's
    OAuthBearerClientInitialResponse reads it; Kafka's generic failure otherwise."""
    match = _CLIENT_FIRST.fullmatch(message.decode("utf-8", "replace"))
    if match is None:
        raise invalid_credentials(MECHANISM)
    pairs = dict(p.split("=", 1) for p in match["kvpairs"].split(SEPARATOR) if p)
    auth = _AUTH.fullmatch(pairs.pop("auth", ""))
    if auth is None or auth["scheme"].lower() != "bearer":
        raise invalid_credentials(MECHANISM)
    return auth["token"], match["authzid"] or ""


def error_json(status: str, scope: str | None = None) -> str:
    """Kafka's error response, spacing included (OAuthBearerSaslServer.jsonErrorResponse)."""
    text = f'{{"status":"{status}"'
    if scope is not None:
        text += f', "scope":"{scope}"'
    return text + "}"


# -- unsecured tokens ------------------------------------------------------------------------------


class UnsecuredValidator:
    """OAuthBearerUnsecuredValidatorCallbackHandler with OAuthBearerUnsecuredJws's parsing."""

    def __init__(self, options: Mapping[str, str]):
        self.principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "").strip() or "sub"
        self.scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "").strip() or "scope"
        required = (options.get("unsecuredValidatorRequiredScope") or "").split(" ")
        self.required_scope = [s for s in required if s]
        if any(not _SCOPE_ITEM.fullmatch(s) for s in self.required_scope):
            raise ValueError(f"Invalid scope value in unsecuredValidatorRequiredScope: {self.required_scope}")
        self.skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs") or 0)
        if self.skew_ms < 0:
            raise ValueError("unsecuredValidatorAllowableClockSkewMs must not be negative")

    def validate(self, value: str) -> Token:
        if ".." in value:
            raise InvalidToken("Malformed compact serialization contains '..'")
        parts = value.split(".")
        if len(parts) != 3:
            raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
        header, claims = _java_json_object(parts[0]), _java_json_object(parts[1])
        if header.get("alg") != "none":  # Kafka also refuses a missing alg (with a NullPointerException)
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        scope = _scope(claims, self.scope_claim)
        exp, iat = _number(claims, "exp"), _number(claims, "iat")
        if exp is None:
            raise InvalidToken("No expiration time in JWT")
        principal = claims.get(self.principal_claim)
        if principal is not None and not isinstance(principal, str):
            raise InvalidToken(f"The '{self.principal_claim}' claim was not of type String")
        if not principal or not principal.strip():
            raise InvalidToken(f"No principal name in JWT claim: {self.principal_claim}")
        now_ms = time.time() * 1000
        if iat is not None and 1000 * iat > now_ms + self.skew_ms:
            raise InvalidToken(f"The Issued At value ({iat:f} seconds) was after the indicated time "
                               f"({now_ms:.0f} ms) plus allowable clock skew ({self.skew_ms} ms)")
        if now_ms - self.skew_ms >= 1000 * exp:
            raise InvalidToken(f"The indicated time ({now_ms:.0f} ms) minus allowable clock skew ({self.skew_ms} ms) "
                               f"was on or after the Expiration Time value ({exp:f} seconds)")
        if iat is not None and exp <= iat:
            raise InvalidToken(f"The Expiration Time time ({exp:f} seconds) was not after the Issued At time ({iat:f} seconds)")
        for item in self.required_scope:
            if item not in scope:
                raise InvalidToken(f"The provided scope ({sorted(scope)}) was missing a required scope ({item})",
                                   scope="[" + ", ".join(self.required_scope) + "]")
        return Token(principal, round(exp * 1000))


def _java_json_object(part: str) -> dict[str, Any]:
    """Kafka decodes each part with Java's basic Base64 decoder (not the URL-safe one its own
    token builder encodes with), so '-' and '_' fail here exactly as they do on a real broker."""
    if not _BASE64.fullmatch(part) or len(part.rstrip("=")) % 4 == 1:
        raise InvalidToken("malformed Base64 URL encoded value")
    try:
        obj = json.loads(base64.b64decode(part.rstrip("=") + "=" * (-len(part.rstrip("=")) % 4)))
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed JSON") from None
    if not isinstance(obj, dict):
        raise InvalidToken("malformed JSON")
    return obj


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise InvalidToken(f"The '{name}' claim was not of type Number")
    return value


def _scope(claims: Mapping[str, Any], name: str) -> set[str]:
    value = claims.get(name)
    if isinstance(value, str):
        return {value.strip()} if value.strip() else set()
    if value is None:
        return set()
    if not isinstance(value, list):
        raise InvalidToken(f"The '{name}' claim was not of type List")
    return {str(v).strip() for v in value if str(v).strip()}


# -- signed tokens (a JWKS) ------------------------------------------------------------------------


class SignedValidator:
    """OAuthBearerValidatorCallbackHandler's ValidatorAccessTokenValidator (jose4j's checks)."""

    def __init__(self, jwks: Mapping[str, Any] | str | Path, options: Mapping[str, str]):
        self.keys = _load_jwks(jwks)
        self.skew_s = int(options.get("sasl.oauthbearer.clock.skew.seconds") or 30)
        audience = options.get("sasl.oauthbearer.expected.audience") or ""
        self.audiences = {a.strip() for a in audience.split(",") if a.strip()}
        self.issuer = options.get("sasl.oauthbearer.expected.issuer") or None
        self.sub_claim = options.get("sasl.oauthbearer.sub.claim.name") or "sub"
        self.scope_claim = options.get("sasl.oauthbearer.scope.claim.name") or "scope"

    def validate(self, value: str) -> Token:
        try:
            header, claims, signature = jwt.split(value.strip())
        except jwt.MalformedToken as exc:
            raise InvalidToken(f"Malformed JWT provided: {exc}") from None
        algorithm = header.get("alg")
        if algorithm not in _RSA_HASHES:  # "none" included: jose4j's DISALLOW_NONE
            raise InvalidToken(f"the JWS algorithm {algorithm!r} is not allowed")
        key = self._key(header)
        signed = value.strip().rsplit(".", 1)[0].encode()
        _verify_rsa(key, algorithm, signed, signature)
        now = time.time()
        exp, iat, nbf = (_number(claims, n) for n in ("exp", "iat", "nbf"))
        if exp is None or iat is None:
            raise InvalidToken("No Expiration Time (exp) or Issued At (iat) claim is present")
        if now >= exp + self.skew_s:
            raise InvalidToken(f"The JWT is no longer valid - the evaluation time is on or after the Expiration Time (exp={exp})")
        if nbf is not None and now + self.skew_s < nbf:
            raise InvalidToken(f"The JWT is not yet valid (nbf={nbf})")
        self._check_audience(claims.get("aud"))
        if self.issuer is not None and claims.get("iss") != self.issuer:
            raise InvalidToken(f"Issuer (iss) claim value ({claims.get('iss')}) doesn't match expected value of {self.issuer}")
        _scope(claims, self.scope_claim)
        sub = claims.get(self.sub_claim)
        if not isinstance(sub, str) or not sub.strip():
            raise InvalidToken(f"{self.sub_claim} value must be non-empty")
        if exp < 0 or iat < 0:
            raise InvalidToken("exp and iat values must be non-negative")
        return Token(sub.strip(), round(exp * 1000))

    def _key(self, header: Mapping[str, Any]) -> Any:
        kid = header.get("kid")
        found = [k for k in self.keys if k.get("kty") == "RSA" and k.get("use", "sig") == "sig"
                 and (kid is None or k.get("kid") == kid) and k.get("alg", header["alg"]) == header["alg"]]
        if len(found) != 1:
            raise InvalidToken(f"Unable to find a suitable verification key for JWS w/ header {dict(header)} "
                               f"({len(found)} keys match)")
        from cryptography.hazmat.primitives.asymmetric import rsa
        n, e = (int.from_bytes(jwt.b64url_decode(found[0][p]), "big") for p in ("n", "e"))
        return rsa.RSAPublicNumbers(e, n).public_key()

    def _check_audience(self, aud: object) -> None:
        given = [aud] if isinstance(aud, str) else list(aud) if isinstance(aud, list) else []
        if aud is None:
            if self.audiences:
                raise InvalidToken("No Audience (aud) claim present.")
            return
        if not self.audiences:
            raise InvalidToken(f"Audience (aud) claim {given} present in the JWT but no expected audience "
                               "value(s) were provided to the JWT Consumer.")
        if not self.audiences.intersection(given):
            raise InvalidToken(f"Audience (aud) claim {given} doesn't contain an acceptable identifier. "
                               f"Expected {sorted(self.audiences)} as an aud value.")


def _load_jwks(jwks: Mapping[str, Any] | str | Path) -> list[dict[str, Any]]:
    data = json.loads(Path(jwks).read_text()) if isinstance(jwks, str | Path) else jwks
    keys = data.get("keys") if isinstance(data, Mapping) else None
    if not isinstance(keys, list):
        raise ValueError('oauth_jwks is a JWK set: {"keys": [...]}')
    return [k for k in keys if isinstance(k, dict)]


def _verify_rsa(key: Any, algorithm: str, signed: bytes, signature: str) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding
    try:
        key.verify(jwt.b64url_decode(signature), signed, padding.PKCS1v15(), getattr(hashes, _RSA_HASHES[algorithm])())
    except (InvalidSignature, ValueError, binascii.Error):
        raise InvalidToken("JWS signature is invalid") from None
