"""Where the service under test is: `npm run test:python` starts it and sets these variables."""

import os
import uuid

from memorychat import Memorychat, sign_jwt

BASE_URL = os.environ.get("MEMORYCHAT_URL", "http://127.0.0.1:8080")
JWT_SECRET = os.environ["MEMORYCHAT_JWT_SECRET"]


def new_user(prefix: str = "py") -> str:
    """Each test acts as users of its own, so tests need no order and no cleanup."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def as_user(user: str, **claims) -> Memorychat:
    return Memorychat(BASE_URL, token=sign_jwt(JWT_SECRET, user, **claims))


def as_admin(tenant: str) -> Memorychat:
    return as_user(new_user("admin"), tenant=tenant, roles=["memory-admin"])
