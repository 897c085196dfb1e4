"""A cap on how deeply a request's JSON nests, checked before anything parses it.

Python's ``json`` parser recurses once per level: 50,000 levels of ``[`` end in a
``RecursionError`` (a 500, where the hooks promise ``{}``), and levels a parser survives still
reach code that recurses over them (validation, encoding, the vector store's payload, whose
parser stops at 128). No body of ours nests beyond a handful of levels, so a body deeper than
:data:`MAX_JSON_DEPTH` is refused whole: 422 ``bad_input`` naming the limit, as for malformed
JSON, or, on a path that answers every failure quietly (the Claude Code hooks), 200 ``{}``.

The check, :func:`nesting_exceeds`, is pure and cheap: a body with fewer brackets than the
limit (nearly every body) costs one ``bytes.translate`` to its brackets and quotes; any other,
a split at the quotes that drops the strings and passes of ``bytes.replace`` that strip the
innermost pairs, one level each: never a Python loop over the body's bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from .middleware import BODY_METHODS, quiet, read_whole, refuse, replay

#: Deepest nesting of arrays and objects a request body may have.
MAX_JSON_DEPTH = 100

#: Every byte but brackets and quotes: what is left of a body once its text is gone.
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'[]{}"')
_SQUARE = bytes.maketrans(b"{}", b"[]")
#: Bodies that are not JSON text, whatever else they are (a backup is a zip upload).
_NOT_JSON = (b"multipart/", b"application/zip", b"application/octet-stream")


def nesting_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a JSON parser reading ``body`` would go deeper than ``limit`` nested arrays and
    objects before it finished or found an error.

    Exact for valid JSON; for malformed JSON it may answer True where a parser stops early
    (the body is refused either way). Brackets inside strings do not count.
    """
    if b"\\" in body:  # escapes: an escaped backslash, then an escaped quote, is no quote
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = body.translate(_SQUARE, _NOT_STRUCTURE)
    if structure.count(b"[") <= limit:
        return False
    # Every other piece between quotes is a string's; one never closed ends where a parser stops.
    brackets = b"".join(structure.split(b'"')[::2])
    levels = 0
    while b"[]" in brackets:  # each pass strips the innermost pairs: one level
        if levels == limit:
            return True
        brackets = brackets.replace(b"[]", b"")
        levels += 1
    # Left: ``]...][...[``, brackets that close nothing, then ones never closed, which a parser
    # enters before it finds the body ends early.
    return levels + brackets.count(b"[") > limit


class JsonDepthLimit:
    """Refuse request bodies nested deeper than ``max_depth`` (see the module's docstring).

    ``quiet_paths`` answer 200 ``{}`` instead of the error: the hook route's promise. Sits
    inside the body-size cap, so the body it reads whole is capped already.
    """

    def __init__(self, app: ASGIApp, max_depth: int = MAX_JSON_DEPTH, quiet_paths: Iterable[str] = ()):
        self.app = app
        self.max_depth = max_depth
        self.quiet_paths = quiet(quiet_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS or _not_json(scope):
            await self.app(scope, receive, send)
            return
        body, gone = await read_whole(receive)
        if gone is None and nesting_exceeds(body, self.max_depth):
            await self._refuse(scope, send)
            return
        await self.app(scope, replay(body, gone, receive), send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        reason = f"JSON nested deeper than {self.max_depth} levels of arrays and objects"
        problems = [{"field": "body", "message": reason}]
        await refuse(scope, send, self.quiet_paths, 422, "bad_input", f"body: {reason}", problems=problems)


def _not_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            return value.lower().startswith(_NOT_JSON)
    return False
