"""JSON Web Tokens as OAUTHBEARER carries them (RFC 7519 compact serialization, RFC 7515 JWS).

Only what both sides of the shell need: base64url without padding, reading a token's header
and claims without checking its signature (the client reads `exp` and `sub` as librdkafka does;
the sandbox's validators check the rest), and the unsecured token librdkafka builds from
`sasl.oauthbearer.config`.
"""

from __future__ import annotations

import base64
import json
import time


class MalformedToken(ValueError):
    """Not a JWS compact serialization (three base64url parts of JSON objects)."""


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_part(obj: dict) -> str:
    return b64url_encode(json.dumps(obj, separators=(",", ":")).encode())


def split(token: str) -> tuple[dict, dict, str]:
    """(header, claims, signature part) of a compact JWS, signature unchecked."""
    parts = token.split(".")
    if len(parts) != 3:
        raise MalformedToken("a JWT has 3 dot-separated parts")
    try:
        header, claims = (json.loads(b64url_decode(p)) for p in parts[:2])
    except (ValueError, UnicodeDecodeError):
        raise MalformedToken("a JWT's header and claims are base64url-encoded JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise MalformedToken("a JWT's header and claims are JSON objects")
    return header, claims, parts[2]


def unsecured_token(principal: str, principal_claim: str = "sub", scope_claim: str = "scope",
                    scope: list[str] | None = None, life_seconds: int = 3600,
                    now: float | None = None) -> str:
    """An unsecured JWS (`alg` none, empty signature) as librdkafka's default token refresh
    builds it: iat and exp in seconds with milliseconds, the scope as a JSON list."""
    now = (time.time_ns() // 1_000_000 if now is None else int(now * 1000)) / 1000  # whole ms, as librdkafka
    claims: dict[str, object] = {principal_claim: principal, "iat": now, "exp": now + life_seconds}
    if scope:
        claims[scope_claim] = list(dict.fromkeys(scope))
    return f"{encode_part({'alg': 'none'})}.{encode_part(claims)}."
