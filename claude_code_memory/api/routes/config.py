"""The saved mem0 configuration (`/api/v1/config`), in OpenMemory's shape.

The document, its defaults, masking and validation are
:mod:`claude_code_memory.memories.saved_config`'s. ``PUT /`` saves and returns the saved config
(OpenMemory's returned nothing, a 500); a bad shape is a 422 that names the field. The config is
global, so reading it needs any valid token and changing it the admin token.

What the server runs with comes from ``config.yaml`` and the environment only (one place for
configuration, validated at start-up), shown with secrets masked by
``GET /api/v1/config/effective``. The saved sections are kept for OpenMemory's UI and scripts;
they do not change the running engine — to switch the LLM or embedder, edit ``config.yaml``
and restart.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from ...auth.identity import Principal
from ...errors import BadInput, Forbidden
from ...memories.saved_config import providers
from ..deps import PrincipalDep, ServiceDep, SettingsDep

router = APIRouter(prefix="/api/v1/config", tags=["config"])


def _require_admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise Forbidden("changing the server configuration needs the admin token")


def _object(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadInput(f"{what} must be a JSON object")
    return body


_BODY = Body(..., examples=[{"mem0": {"llm": {"provider": "ollama", "config": {"model": "llama3.1"}}}}])


# -- routes -----------------------------------------------------------------------------------
@router.get("")
def get_config(principal: PrincipalDep, service: ServiceDep) -> dict[str, Any]:
    """The saved config, secrets masked (created from the defaults on first read)."""
    return service.saved_config.get()


@router.put("")
def put_config(principal: PrincipalDep, service: ServiceDep, body: Any = _BODY) -> dict[str, Any]:
    """Replace the sections given (``openmemory``, ``mem0``), save, and return the saved config.
    Admin token only. Takes effect for the LLM when the engine is next built (at start-up)."""
    _require_admin(principal)
    body = _object(body, "the configuration")
    return service.saved_config.replace(body)


@router.patch("")
def patch_config(principal: PrincipalDep, service: ServiceDep, body: Any = _BODY) -> dict[str, Any]:
    """Deep-merge the body into the saved config, save, return it. Admin token only."""
    _require_admin(principal)
    body = _object(body, "the configuration patch")
    return service.saved_config.merge(body)


@router.post("/reset")
def reset_config(principal: PrincipalDep, service: ServiceDep) -> dict[str, Any]:
    """Back to the defaults derived from the server's settings. Admin token only."""
    _require_admin(principal)
    return service.saved_config.reset()


@router.get("/providers")
def config_providers(principal: PrincipalDep) -> dict[str, Any]:
    """The provider names each section accepts (for a settings form's dropdowns), the stock
    OpenMemory UI's spellings accepted for them, and what this server itself runs with."""
    return providers()


@router.get("/effective")
def effective_config(settings: SettingsDep, principal: PrincipalDep) -> dict[str, Any]:
    """The settings the server runs with (config.yaml, .env, environment), secrets masked."""
    return settings.masked()


@router.get("/mem0/llm")
def get_llm(principal: PrincipalDep, service: ServiceDep) -> Any:
    """The LLM section: ``{provider, config}``."""
    return service.saved_config.section(("mem0", "llm"))


@router.put("/mem0/llm")
def put_llm(principal: PrincipalDep, service: ServiceDep, body: Any = Body(...)) -> Any:
    """Replace the LLM section (admin token). Used when the engine is next built."""
    _require_admin(principal)
    return service.saved_config.replace_section(("mem0", "llm"), _object(body, "the LLM section"))


@router.get("/mem0/embedder")
def get_embedder(principal: PrincipalDep, service: ServiceDep) -> Any:
    """The embedder section: ``{provider, config}``."""
    return service.saved_config.section(("mem0", "embedder"))


@router.put("/mem0/embedder")
def put_embedder(principal: PrincipalDep, service: ServiceDep, body: Any = Body(...)) -> Any:
    """Replace the embedder section (admin token). Stored for OpenMemory clients; the embedder
    in use comes from config.yaml, since changing it would invalidate every stored vector."""
    _require_admin(principal)
    return service.saved_config.replace_section(("mem0", "embedder"), _object(body, "the embedder section"))


@router.get("/mem0/vector_store")
def get_vector_store(principal: PrincipalDep, service: ServiceDep) -> Any:
    """The vector store section, or null for the embedded Qdrant Edge store."""
    return service.saved_config.section(("mem0", "vector_store"))


@router.put("/mem0/vector_store")
def put_vector_store(principal: PrincipalDep, service: ServiceDep, body: Any = Body(None)) -> Any:
    """Replace the vector store section; null means the embedded store (admin token). Stored
    for OpenMemory clients; the store in use comes from config.yaml / QDRANT_URL."""
    _require_admin(principal)
    value = None if body is None else _object(body, "the vector store section")
    return service.saved_config.replace_section(("mem0", "vector_store"), value)


@router.get("/openmemory")
def get_openmemory(principal: PrincipalDep, service: ServiceDep) -> Any:
    """The OpenMemory section: ``{custom_instructions}``."""
    return service.saved_config.section(("openmemory",))


@router.put("/openmemory")
def put_openmemory(principal: PrincipalDep, service: ServiceDep, body: Any = Body(...)) -> Any:
    """Replace the OpenMemory section (admin token)."""
    _require_admin(principal)
    return service.saved_config.replace_section(("openmemory",), _object(body, "the openmemory section"))
