"""A client for memorychat over HTTP, with the standard library only (urllib, json, dataclasses)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Iterator

from .errors import MemorychatError
from .sse import StreamEvent, read_events

JSON = dict[str, Any]


class Memorychat:
    """
    One caller of the service: a user's JWT (`token`), or an API key (`api_key`), optionally acting
    for the end user `user` (sent as X-Memory-User; the key needs the act_for_users permission and the id must start with its user_namespace).
    Every method returns the service's JSON as dicts and raises MemorychatError for a problem document.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        api_key: str | None = None,
        user: str | None = None,
        timeout_s: float = 120.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        if (token is None) == (api_key is None):
            raise ValueError("pass either token (a JWT) or api_key")
        if user is not None and api_key is None:
            raise ValueError("user (X-Memory-User) goes with an api_key; a JWT names its user itself")
        self.base_url = base_url.rstrip("/")
        self.token, self.api_key, self.user = token, api_key, user
        self.timeout_s = timeout_s
        self.headers = dict(headers or {})

    def for_user(self, user: str) -> "Memorychat":
        """The same API key acting for another end user (e.g. one per Slack or Telegram user)."""
        if self.api_key is None:
            raise ValueError("for_user needs a client made with an api_key")
        return Memorychat(self.base_url, api_key=self.api_key, user=user, timeout_s=self.timeout_s, headers=self.headers)

    # --- asking -----------------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        *,
        session_id: str | None = None,
        session_key: str | None = None,
        upstream_authorization: str | None = None,
        **options: Any,
    ) -> JSON:
        """
        POST /memoryChat: the answer, with memory. `options`: any field of the request (vdp_database_names, ...).
        `upstream_authorization`: the asking user's own Denodo credentials for this call ("Basic …" or
        "Bearer …", sent as X-Upstream-Authorization); not needed once the user has linked their account.
        """
        body = _without_none({"question": question, "session_id": session_id, "session_key": session_key, **options})
        return self._json("POST", "/memoryChat", body=body, headers=_upstream(upstream_authorization))

    def follow_up(self, previous: JSON, question: str, **options: Any) -> JSON:
        """Asks in the conversation of a previous reply of `ask`."""
        return self.ask(question, session_id=previous["conversation_metadata"]["conversation_id"], **options)

    def stream(
        self,
        question: str,
        *,
        session_id: str | None = None,
        session_key: str | None = None,
        upstream_authorization: str | None = None,
        **options: Any,
    ) -> Iterator[StreamEvent]:
        """POST /memoryChat as Server-Sent Events: `memory`, `answer` pieces, then `reply` (or `error`)."""
        body = _without_none({"question": question, "session_id": session_id, "session_key": session_key, **options})
        response = self._send("POST", "/memoryChat", body=body, accept="text/event-stream", headers=_upstream(upstream_authorization))
        with response:
            try:
                yield from read_events(response)
            except ValueError as err:  # a data line that is not JSON, or not UTF-8
                raise MemorychatError.unusable_reply(response.status, str(err)) from None

    # --- sessions and turns -----------------------------------------------------------------------

    def sessions(self, *, key: str | None = None, limit: int | None = None, cursor: str | None = None) -> JSON:
        return self._json("GET", "/sessions", query={"key": key, "limit": limit, "cursor": cursor})

    def session(self, session_id: str) -> JSON:
        return self._json("GET", f"/sessions/{_seg(session_id)}")

    def rename_session(self, session_id: str, name: str) -> JSON:
        return self._json("PATCH", f"/sessions/{_seg(session_id)}", body={"session_name": name})

    def set_memory_scope(self, session_id: str, scope: str | None) -> JSON:
        """Keeps a conversation to itself (`"session"`), lets it use the user's others (`"user"`), or `None`: the default again."""
        return self._json("PATCH", f"/sessions/{_seg(session_id)}", body={"memory_scope": scope})

    def clear_session(self, session_id: str) -> JSON:
        return self._json("POST", f"/sessions/{_seg(session_id)}/clear")

    def delete_session(self, session_id: str) -> None:
        self._json("DELETE", f"/sessions/{_seg(session_id)}")

    def store_turn(self, question: str, answer: str, *, session_id: str | None = None, session_key: str | None = None, **fields: Any) -> JSON:
        """Stores a finished turn (a bot with its own LLM): in `session_id`, or a new or keyed session."""
        body = _without_none({"question": question, "answer": answer, **fields})
        if session_id is not None:
            return self._json("POST", f"/sessions/{_seg(session_id)}/turns", body=body)
        return self._json("POST", "/sessions/turns", body=_without_none({**body, "session_key": session_key}))

    def correct_turn(self, session_id: str, number: int, **fields: Any) -> JSON:
        return self._json("PATCH", f"/sessions/{_seg(session_id)}/turns/{number}", body=fields)

    def delete_turn(self, session_id: str, number: int) -> None:
        self._json("DELETE", f"/sessions/{_seg(session_id)}/turns/{number}")

    def rate_turn(self, session_id: str, number: int, rating: str, comment: str | None = None) -> JSON:
        return self._json("POST", f"/sessions/{_seg(session_id)}/turns/{number}/feedback", body=_without_none({"rating": rating, "comment": comment}))

    # --- memory for your own LLM ------------------------------------------------------------------

    def context(self, question: str, *, session_id: str | None = None, session_key: str | None = None, format: str = "text", **options: Any) -> JSON:
        """POST /memory/context: what to put in your LLM's prompt (`format`: text, openai or anthropic)."""
        body = _without_none({"question": question, "session_id": session_id, "session_key": session_key, "format": format, **options})
        return self._json("POST", "/memory/context", body=body)

    def search(self, query: str, **options: Any) -> JSON:
        """POST /memory/search: the user's past turns ranked by similarity (k, session_id, min_similarity, ...)."""
        return self._json("POST", "/memory/search", body={"query": query, **options})

    # --- SQL recall -------------------------------------------------------------------------------

    def turn_sql(self, session_id: str, ref: str | int = "last") -> JSON:
        """The SQL of a turn: its number, or `first`, `last`, `previous`."""
        return self._json("GET", f"/sessions/{_seg(session_id)}/turns/{_seg(str(ref))}/sql")

    def find_sql(self, session_id: str, keywords: str) -> JSON:
        return self._json("GET", f"/sessions/{_seg(session_id)}/sql", query={"q": keywords})

    def result_csv(
        self,
        session_id: str,
        ref: str | int = "last",
        *,
        fresh: bool | None = None,
        limit: int | None = None,
        upstream_authorization: str | None = None,
    ) -> str:
        """A turn's result as CSV text (stored, or re-run with `fresh=True` where the service can, with the user's credentials)."""
        query = {"fresh": None if fresh is None else str(fresh).lower(), "limit": limit}
        path = f"/sessions/{_seg(session_id)}/turns/{_seg(str(ref))}/result.csv"
        with self._send("GET", path, query=query, accept="text/csv", headers=_upstream(upstream_authorization)) as response:
            return _text(response)

    # --- GDPR -------------------------------------------------------------------------------------

    def request_export(self) -> JSON:
        """POST /me/export: queues an export of all the caller's data (202); poll gdpr_request, then download."""
        return self._json("POST", "/me/export")

    def gdpr_request(self, request_id: str) -> JSON:
        return self._json("GET", f"/gdpr/requests/{_seg(request_id)}")

    def download_export(self, request_id: str) -> JSON:
        return self._json("GET", f"/gdpr/requests/{_seg(request_id)}/download")

    def export_my_data(self, *, poll_s: float = 1.0, timeout_s: float = 60.0) -> JSON:
        """
        Requests an export, waits for it and downloads it. Polls as often as the service's Retry-After
        says (every `poll_s` seconds where it says nothing); a poll or the download refused `429` is
        sent again once the wait its Retry-After names is over, while `timeout_s` allows.
        """
        deadline = time.monotonic() + timeout_s
        status, wait = self._polled("POST", "/me/export", deadline, poll_s)
        request_id = status["request_id"]
        path = f"/gdpr/requests/{_seg(request_id)}"
        while status["status"] not in ("completed", "failed"):
            if time.monotonic() + wait > deadline:
                raise TimeoutError(f"the export {request_id} is still {status['status']}")
            time.sleep(wait)
            status, wait = self._polled("GET", path, deadline, poll_s)
        if status["status"] == "failed":
            raise RuntimeError(f"the export {request_id} failed")
        return self._polled("GET", f"{path}/download", deadline, poll_s)[0]

    def erase_my_data(self) -> JSON:
        """DELETE /me: queues the erasure of every session, turn and export of the caller (202)."""
        return self._json("DELETE", "/me")

    # --- account linking (docs/account-linking.md) -------------------------------------------------

    def start_account_link(self) -> JSON:
        """
        POST /me/account-link: `authorization_url`, the identity provider's sign-in page for this user.
        Send it to them (privately: whoever opens it links their own account); after they sign in, their
        questions go to the Denodo AI SDK with their own token. Valid once, until `expires_at`.
        """
        return self._json("POST", "/me/account-link")

    def account_link(self) -> JSON:
        """GET /me/account-link: `status` (linked, expired or not-linked), with the linked `username`."""
        return self._json("GET", "/me/account-link")

    def unlink_account(self) -> JSON:
        """DELETE /me/account-link: the tokens are deleted, and revoked at the provider where it can."""
        return self._json("DELETE", "/me/account-link")

    # --- API keys (an admin's JWT, role memory-admin) ---------------------------------------------

    def create_api_key(
        self,
        name: str,
        *,
        act_for_users: bool = False,
        user_namespace: str | None = None,
        databases: list[str] | None = None,
        routes: list[str] | None = None,
    ) -> JSON:
        """A new key of the admin's tenant; `api_key` in the reply is the secret, shown this once.

        With `act_for_users`, `user_namespace` (e.g. "slack:T123:") is required: the key acts only for
        user ids that start with it, and their memory is apart from users who sign in with a JWT.
        """
        body = _without_none(
            {"name": name, "act_for_users": act_for_users, "user_namespace": user_namespace, "databases": databases, "routes": routes}
        )
        return self._json("POST", "/admin/api-keys", body=body)

    def api_keys(self) -> JSON:
        return self._json("GET", "/admin/api-keys")

    def revoke_api_key(self, key_id: str) -> JSON:
        return self._json("DELETE", f"/admin/api-keys/{_seg(key_id)}")

    # --- HTTP -------------------------------------------------------------------------------------

    def _json(
        self,
        method: str,
        path: str,
        *,
        body: JSON | None = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        with self._send(method, path, body=body, query=query, headers=headers) as response:
            return _json_of(response)

    def _polled(self, method: str, path: str, deadline: float, poll_s: float) -> tuple[Any, float]:
        """
        A call of a poll: sent again after a `429` once its Retry-After is over, while `deadline` allows
        (a rate-limited call is refused before it does anything); with the seconds the reply's
        Retry-After asks to wait before the next poll (`poll_s` where it names none).
        """
        while True:
            try:
                with self._send(method, path) as response:
                    wait = _seconds(response.headers.get("retry-after"))
                    return _json_of(response), poll_s if wait is None else wait
            except MemorychatError as err:
                if err.status != 429 or err.retry_after_s is None or time.monotonic() + err.retry_after_s > deadline:
                    raise
                time.sleep(err.retry_after_s)

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: JSON | None = None,
        query: dict[str, Any] | None = None,
        accept: str = "application/json",
        headers: dict[str, str] | None = None,
    ):
        params = _without_none(query or {})
        url = f"{self.base_url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        sent = {"accept": accept, **self.headers, **(headers or {}), **self._credentials()}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            sent["content-type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=sent)
        try:
            return _OPENER.open(request, timeout=self.timeout_s)
        except urllib.error.HTTPError as err:
            text = err.read().decode("utf-8", "replace")
            try:
                problem = json.loads(text)
            except ValueError:
                problem = None
            raise MemorychatError.from_problem(err.code, problem, text, retry_after_s=_seconds(err.headers.get("retry-after"))) from None

    def _credentials(self) -> dict[str, str]:
        if self.token is not None:
            return {"authorization": f"Bearer {self.token}"}
        headers = {"x-api-key": str(self.api_key)}
        if self.user is not None:
            # HTTP headers carry bytes; urllib sends str as Latin-1, so an id beyond ASCII goes as its UTF-8 bytes.
            headers["x-memory-user"] = self.user.encode("utf-8").decode("latin-1")
        return headers


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """
    Follows a redirect only within the service's origin (scheme, host and port). urllib would carry
    every header to wherever the service points, the JWT, the API key and the user's Denodo
    credentials included; a redirect elsewhere is refused instead, naming where it pointed.
    """

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        if _origin(newurl) != _origin(req.full_url):
            fp.close()
            raise MemorychatError(
                status=code,
                code="redirect-refused",
                title="Redirect to another origin refused",
                detail=f"the service redirected to {_origin(newurl)}, another origin than {_origin(req.full_url)}: "
                "credentials are not sent there; use that URL as the base URL if it is the service",
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameOriginRedirects)


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def _json_of(response: Any) -> Any:
    text = _text(response)
    try:
        return json.loads(text) if text else None
    except ValueError:
        raise MemorychatError.unusable_reply(response.status, f"not JSON: {text[:200]}") from None


def _seconds(retry_after: str | None) -> float | None:
    """A Retry-After of delay-seconds, as the service sends it; None for none, or for an HTTP date."""
    if retry_after is None or not retry_after.strip().isdigit():
        return None
    return float(retry_after.strip())


def _text(response: Any) -> str:
    try:
        return response.read().decode("utf-8")
    except UnicodeDecodeError as err:
        raise MemorychatError.unusable_reply(response.status, f"not UTF-8 text ({err.reason})") from None


def _upstream(authorization: str | None) -> dict[str, str]:
    return {} if authorization is None else {"x-upstream-authorization": authorization}


def _seg(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
