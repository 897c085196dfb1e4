"""The UI's only way to data: the API over HTTP, with the signed-in user's token.

Failures become two exceptions the pages translate once (see ``web.py``): :class:`ApiError`
for an answer the API refused (4xx: the message is the API's ``detail``) and
:class:`ApiUnavailable` when the API cannot be reached or fails (5xx, timeouts).
"""

from __future__ import annotations

from typing import Any

import httpx

#: Memory reads and writes embed text; an import may take a while on a large archive.
TIMEOUT = httpx.Timeout(30.0, connect=5.0)
IMPORT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)


class ApiError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class ApiUnavailable(Exception):
    """The API did not answer, or answered with a server error."""


class Api:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = httpx.Client(base_url=self.base_url, timeout=TIMEOUT, follow_redirects=False)

    def close(self) -> None:
        self._client.close()

    def raw(self, method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        try:
            response = self._client.request(method, path, headers=headers, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiUnavailable(
                f"the memory server at {self.base_url} cannot be reached ({exc.__class__.__name__})"
            ) from None
        if response.status_code >= 500:
            raise ApiUnavailable(
                f"the memory server answered HTTP {response.status_code}: {_detail(response)}"
            )
        if response.status_code >= 400:
            raise ApiError(response.status_code, _detail(response))
        return response

    def call(self, method: str, path: str, token: str, **kwargs: Any) -> Any:
        response = self.raw(method, path, token, **kwargs)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ApiUnavailable(f"the memory server sent something that is not JSON for {path}") from None

    def health(self) -> dict[str, Any] | None:
        """The API's ``/health`` report (no token), or None when it does not answer with one."""
        try:
            body = self._client.get("/health", timeout=3).json()
        except (httpx.HTTPError, ValueError):
            return None
        return body if isinstance(body, dict) else None

    def get(self, path: str, token: str, **kwargs: Any) -> Any:
        return self.call("GET", path, token, **kwargs)

    def post(self, path: str, token: str, **kwargs: Any) -> Any:
        return self.call("POST", path, token, **kwargs)

    def put(self, path: str, token: str, **kwargs: Any) -> Any:
        return self.call("PUT", path, token, **kwargs)

    def delete(self, path: str, token: str, **kwargs: Any) -> Any:
        return self.call("DELETE", path, token, **kwargs)


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return body["detail"]
    return str(body)[:300]
