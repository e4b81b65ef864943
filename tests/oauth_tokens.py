"""Signed JWTs for the OAUTHBEARER tests: an RSA key, its JWK set, RS256 tokens, and a tiny
OIDC token endpoint on loopback that hands them out for the client-credentials grant."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
import urllib.parse

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from kafka_shell.base import jwt


class SigningKey:
    def __init__(self, kid: str = "test-key"):
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict:
        numbers = self.private.public_key().public_numbers()
        as_b64 = lambda n: jwt.b64url_encode(n.to_bytes((n.bit_length() + 7) // 8, "big"))
        return {"keys": [{"kty": "RSA", "kid": self.kid, "use": "sig", "alg": "RS256",
                          "n": as_b64(numbers.n), "e": as_b64(numbers.e)}]}

    def token(self, sub: str = "bob", life_s: float = 600, **claims: object) -> str:
        now = time.time()
        body = {"sub": sub, "iat": int(now), "exp": int(now + life_s), **claims}
        head = f"{jwt.encode_part({'alg': 'RS256', 'typ': 'JWT', 'kid': self.kid})}.{jwt.encode_part(body)}"
        signature = self.private.sign(head.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{head}.{jwt.b64url_encode(signature)}"


class TokenEndpoint:
    """POST /token with the client-credentials grant and HTTP Basic client credentials; answers
    {"access_token": <a signed JWT for sub=client id>}, or 401 for other credentials."""

    def __init__(self, key: SigningKey, clients: dict[str, str]):
        self.requests: list[dict] = []
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
                basic = self.headers.get("Authorization", "").removeprefix("Basic ")
                client_id, _, secret = base64.b64decode(basic).decode().partition(":")
                endpoint.requests.append({"form": form, "client_id": client_id, "path": self.path})
                if clients.get(client_id) != secret or form.get("grant_type") != "client_credentials":
                    self.send_response(401)
                    self.end_headers()
                    return
                body = json.dumps({"access_token": key.token(sub=client_id, scope=form.get("scope", "")),
                                   "token_type": "Bearer", "expires_in": 600}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
