"""HS256 JWTs with the standard library: for local mode, tests and services that hold the signing secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign_jwt(
    secret: str,
    user_id: str,
    *,
    tenant: str | None = None,
    roles: list[str] | None = None,
    expires_in_s: int = 3600,
    claims: dict[str, Any] | None = None,
) -> str:
    """A token for `user_id` (claim `sub`), signed with the service's JWT_SECRET. Prefer an API key for bots."""
    now = int(time.time())
    payload: dict[str, Any] = {"sub": user_id, "iat": now, "exp": now + expires_in_s}
    if tenant is not None:
        payload["tenant"] = tenant
    if roles:
        payload["roles"] = roles
    payload.update(claims or {})
    header = {"alg": "HS256", "typ": "JWT"}
    signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(payload).encode())}"
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64url(signature)}"
