"""The service's RFC 9457 problem documents, raised as exceptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FieldError:
    field: str
    message: str


@dataclass
class MemorychatError(Exception):
    """
    A 4xx or 5xx answer: `code` is the stable problem code of docs/errors.md (e.g. `session-not-found`).
    The client raises it with codes of its own too: `invalid-response` (a reply it cannot read),
    `redirect-refused` (a redirect to another origin, where credentials must not go).
    """

    status: int
    code: str
    title: str
    detail: str
    errors: list[FieldError] = field(default_factory=list)
    problem: dict[str, Any] = field(default_factory=dict)
    #: The reply's Retry-After in seconds (a `429`, a `503`), when it gave one.
    retry_after_s: float | None = None

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.detail}"

    @classmethod
    def unusable_reply(cls, status: int, detail: str) -> "MemorychatError":
        """A 2xx reply the client cannot read (not JSON, not UTF-8): the client's own code, `invalid-response`."""
        return cls(status=status, code="invalid-response", title="The service's reply could not be read", detail=detail)

    @classmethod
    def from_problem(
        cls, status: int, problem: dict[str, Any] | None, text: str = "", *, retry_after_s: float | None = None
    ) -> "MemorychatError":
        # A reply that is no problem document (a proxy's HTML page) still raises, with its text as detail.
        if not isinstance(problem, dict):
            return cls(status=status, code="http-error", title="HTTP error", detail=text[:500], problem={}, retry_after_s=retry_after_s)
        return cls(
            status=int(problem.get("status", status)),
            code=str(problem.get("code", "http-error")),
            title=str(problem.get("title", "")),
            detail=str(problem.get("detail", "")),
            errors=[FieldError(str(e.get("field", "")), str(e.get("message", ""))) for e in problem.get("errors") or []],
            problem=problem,
            retry_after_s=retry_after_s,
        )
