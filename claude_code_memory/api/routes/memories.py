"""`/api/v1/memories`: OpenMemory's memories router, plus semantic search."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.concurrency import run_in_threadpool

from ...domain.memory_state import MemoryState
from ...memories.organise.scopes import search_scope
from ...memories.read_model import queries
from ...memories.read_model.queries import MAX_SUBSTRING_CHARS, from_epoch
from ...memories.read_model.shapes import epoch, memory_detail, memory_row, naive_utc, neighbour, provenance
from ...memories.service import MemoryService
from ...search import request as searching
from ...search.planning import MAX_CONTEXT
from ...store.values import DEFAULT_APP
from ..deps import BearerDep, PrincipalDep, ServiceDep, acting_user, authenticate
from ..errors import item_error
from ..middleware import lone_surrogate_error, lone_surrogates
from ..paging import PageField, PageQuery, SizeField, SizeQuery
from .storage import quota_warned, with_quota_warning

#: Most items one batch request may carry.
MAX_BATCH_ITEMS = 500

router = APIRouter(prefix="/api/v1/memories", tags=["memories"])


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Provenance(_Body):
    """Optional provenance of a write (not in OpenMemory's contract; ignored by its clients):
    the project, the conversation it belongs to (search can then bring neighbouring turns), and
    when it happened (search ranks by it when a query names a date)."""

    project: str | None = Field(None, max_length=512)
    task: str | None = Field(None, max_length=256, description="a task of the project (scopes)")
    conversation_id: str | None = Field(None, max_length=128)
    captured_at: datetime | None = None

    @field_validator("captured_at")
    @classmethod
    def _naive_utc(cls, value: datetime | None) -> datetime | None:
        return naive_utc(value)

    def provenance(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "task": self.task,
            "conversation_id": self.conversation_id,
            "captured_at": self.captured_at,
        }


class CreateMemory(_Provenance):
    user_id: str | None = None
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    infer: bool = False
    app: str = DEFAULT_APP


class BatchItem(_Provenance):
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    infer: bool = False


class BatchCreate(_Body):
    user_id: str | None = None
    app: str = DEFAULT_APP
    # Each item is validated on its own (see create_memories): one bad item fails alone.
    items: list[Any] = Field(min_length=1, max_length=MAX_BATCH_ITEMS)


class SearchRequest(_Body):
    user_id: str | None = None
    query: str
    limit: int = Field(10, ge=1, le=100)
    app_id: uuid.UUID | None = None
    app: str = DEFAULT_APP
    context: int = Field(0, ge=0, le=MAX_CONTEXT, description="neighbouring turns to bring on each side")
    project: str | None = Field(None, max_length=512, description="only memories of this project")
    task: str | None = Field(None, max_length=256, description="only memories of this task (of the project)")
    scope: Literal["default", "project", "task", "global", "all", "team"] | None = Field(
        None, description="with current_project: default ranks its memories first, with global ones"
    )
    current_project: str | None = Field(
        None, max_length=512, description="the searcher's project: its memories and global ones, its first"
    )
    from_date: int | None = Field(None, description="only memories created at or after (epoch seconds)")
    to_date: int | None = Field(None, description="only memories created at or before (epoch seconds)")
    now: datetime | None = Field(
        None,
        description="when the search is asked (ISO-8601; as-of): relative dates in the query "
        '("yesterday", "last Saturday", "two weeks ago") count back from it; default: the server\'s clock',
    )

    @field_validator("now")
    @classmethod
    def _naive_utc(cls, value: datetime | None) -> datetime | None:
        return naive_utc(value)


class DeleteRequest(_Body):
    memory_ids: list[uuid.UUID]
    user_id: str | None = None


class PauseRequest(_Body):
    memory_ids: list[uuid.UUID] | None = None
    category_ids: list[uuid.UUID] | None = None
    app_id: uuid.UUID | None = None
    all_for_app: bool = False
    global_pause: bool = False
    state: MemoryState = MemoryState.paused
    user_id: str | None = None


class UpdateRequest(_Body):
    memory_content: str
    user_id: str | None = None


class FilterRequest(_Body):
    user_id: str | None = None
    page: PageField = 1
    size: SizeField = 10
    search_query: str | None = Field(None, max_length=MAX_SUBSTRING_CHARS)
    app_ids: list[uuid.UUID] | None = None
    category_ids: list[uuid.UUID] | None = None
    sort_column: Literal["memory", "content", "app_name", "created_at"] | None = None
    sort_direction: Literal["asc", "desc"] | None = None
    from_date: int | None = None
    to_date: int | None = None
    show_archived: bool = False
    project: str | None = Field(None, max_length=512, description="only this project's memories")
    task: str | None = Field(None, max_length=256, description="only this task's memories")
    scope: Literal["global"] | None = Field(None, description="global: only memories of no project")


@router.get("", summary="List memories (paginated)")
def list_memories(
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    app_id: uuid.UUID | None = None,
    from_date: int | None = None,
    to_date: int | None = None,
    categories: str | None = Query(None, description="comma-separated category names"),
    search_query: str | None = Query(None, max_length=MAX_SUBSTRING_CHARS),
    sort_column: Literal["memory", "content", "app_name", "created_at"] | None = None,
    sort_direction: Literal["asc", "desc"] | None = None,
    page: PageQuery = 1,
    size: SizeQuery = 50,
    project: str | None = Query(None, max_length=512, description="only this project's memories"),
    task: str | None = Query(None, max_length=256, description="only this task's memories"),
    scope: Literal["global"] | None = Query(None, description="global: only memories of no project"),
) -> dict[str, Any]:
    uid = acting_user(principal, user_id)
    listing = queries.Listing(
        project=project,
        task=task,
        global_only=scope == "global",
        page=page,
        size=size,
        app_ids=[app_id] if app_id else None,
        category_names=[c.strip().lower() for c in categories.split(",") if c.strip()]
        if categories
        else None,
        search_query=search_query,
        from_date=from_date,
        to_date=to_date,
        sort_column=sort_column,
        sort_direction=sort_direction,
    )
    return service.queries.memory_page(uid, listing)


@router.get("/categories", summary="Categories in use by the user's memories")
def list_categories(
    service: ServiceDep, principal: PrincipalDep, user_id: str | None = None
) -> dict[str, Any]:
    return service.queries.categories(acting_user(principal, user_id))


@router.post("", summary="Create a memory")
async def create_memory(
    body: CreateMemory, request: Request, service: ServiceDep, _: BearerDep
) -> JSONResponse:
    # One worker-thread hop, as search below: as a sync route with a principal dependency,
    # FastAPI handed the authentication, the route and the check of its answer to three.
    return await run_in_threadpool(_create, body, request, service)


def _create(body: CreateMemory, request: Request, service: MemoryService) -> JSONResponse:
    uid = acting_user(authenticate(request), body.user_id)
    written = service.writes.write_memory(
        user_id=uid,
        app_name=body.app,
        text=body.text,
        infer=body.infer,
        metadata=body.metadata,
        channel="rest",
        **body.provenance(),
    )
    first = written.results[0] if written.results else None
    if first is None:
        return JSONResponse(None)
    stored = written.rows.get(str(first["id"]))
    if stored is not None:  # the row as written: no need to read it back
        memory = stored.memory
        row = memory_row(memory, stored.app_name, stored.categories)
    else:
        memory = service.reads.get(first["id"], uid)
        row = memory_row(memory)
    if first.get("already_existed"):
        row["already_existed"] = True  # de-duplicated: the same text is stored once per user
    headers = quota_warned(service, uid, row, memory.user_id)
    return JSONResponse(row, headers=headers)


@router.post("/batch", summary="Create up to 500 memories in one request (embedded as a batch)")
def create_memories(
    body: BatchCreate, response: Response, service: ServiceDep, principal: PrincipalDep
) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    valid: list[tuple[int, BatchItem]] = []
    refused: list[dict[str, Any]] = []
    for index, raw in enumerate(body.items):
        surrogates = lone_surrogates(raw)
        if surrogates:  # let through by RejectLoneSurrogates for this item to fail alone
            refused.append({"index": index, **lone_surrogate_error(surrogates)})
            continue
        try:
            valid.append((index, BatchItem.model_validate(raw)))
        except ValidationError as exc:
            refused.append({"index": index, **item_error(exc)})
    added = service.writes.add_memories(
        user_id=uid, app_name=body.app, items=[item.model_dump() for _, item in valid], channel="rest"
    )
    # The service numbers the items it was given; put back each one's place in the request.
    outcomes = sorted(
        [{**outcome, "index": valid[outcome["index"]][0]} for outcome in added] + refused,
        key=lambda outcome: outcome["index"],
    )
    answer = {
        "results": outcomes,
        "created": sum(1 for o in outcomes for r in o.get("results", []) if r.get("event") == "ADD"),
        "failed": sum(1 for o in outcomes if "error" in o),
    }
    return with_quota_warning(response, service, uid, answer)


@router.post("/search", summary="Semantic search over the user's active memories")
async def search_memories(
    body: SearchRequest,
    request: Request,
    service: ServiceDep,
    _: BearerDep,
    now: datetime | None = Query(
        None, description="when the search is asked (ISO-8601), as the body's `now`; the body's wins"
    ),
) -> JSONResponse:
    if body.now is None and now is not None:
        body.now = naive_utc(now)
    # The hot path, in one worker-thread hop: FastAPI would run a sync route's authentication
    # (a database lookup for user tokens), the route and its JSON encoding in three.
    return JSONResponse(await run_in_threadpool(_search, body, request, service))


def _search(body: SearchRequest, request: Request, service: MemoryService) -> dict[str, Any]:
    uid = acting_user(authenticate(request), body.user_id)
    asked = searching.SearchRequest(
        user_id=uid,
        app_name=body.app,
        query=body.query,
        limit=body.limit,
        app_filter=body.app_id,
        context=body.context,
        created_from=from_epoch(body.from_date),
        created_to=from_epoch(body.to_date),
        now=body.now or service.now(),
        **_scope(body),
    )
    hits = service.team_search.search(asked)
    results = []
    for hit in hits:
        item = {
            "id": str(hit.memory.id),
            "content": hit.memory.content,
            "score": hit.score,
            "metadata": hit.memory.metadata_ or {},
            "app": hit.app_name,
            "app_id": str(hit.memory.app_id),
            "categories": hit.categories,
            "created_at": epoch(hit.memory.created_at),
            "provenance": provenance(hit.memory, hit.app_name),
        }
        if hit.team is not None:  # a team's shared memory (docs/teams.md); personal ones unchanged
            item["team"] = hit.team
        if body.context:
            item["context"] = {
                "before": [neighbour(m) for m in hit.before],
                "after": [neighbour(m) for m in hit.after],
            }
        results.append(item)
    return {"results": results}


@router.post("/filter", summary="Filter, sort and page the user's memories (the UI's list call)")
def filter_memories(body: FilterRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    listing = queries.Listing(
        page=body.page,
        size=body.size,
        show_archived=body.show_archived,
        app_ids=body.app_ids,
        category_ids=body.category_ids,
        search_query=body.search_query,
        from_date=body.from_date,
        to_date=body.to_date,
        sort_column=body.sort_column,
        sort_direction=body.sort_direction,
        project=body.project,
        task=body.task,
        global_only=body.scope == "global",
    )
    return service.queries.memory_page(uid, listing)


@router.delete("", summary="Delete memories (vector, text and categories are removed)")
def delete_memories(
    service: ServiceDep, principal: PrincipalDep, body: DeleteRequest = Body(...)
) -> dict[str, str]:
    uid = acting_user(principal, body.user_id)
    count = service.states.delete_memories(body.memory_ids, user_id=uid, changed_by=uid)
    return {"message": f"Successfully deleted {count} memories"}


@router.post("/actions/archive", summary="Archive memories")
def archive_memories(
    service: ServiceDep,
    principal: PrincipalDep,
    body: list[uuid.UUID] = Body(...),
    user_id: str | None = None,
) -> dict[str, str]:
    uid = _user_or_internal_id(service, principal, user_id)
    count = service.states.change_state(body, MemoryState.archived, user_id=uid, changed_by=uid)
    return {"message": f"Successfully archived {count} memories"}


@router.post("/actions/pause", summary="Change the state of memories (pause, archive, resume as active)")
def pause_memories(body: PauseRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, str]:
    uid = acting_user(principal, body.user_id)
    ids = service.queries.pause_targets(
        uid,
        global_pause=body.global_pause,
        app_id=body.app_id,
        memory_ids=body.memory_ids,
        category_ids=body.category_ids,
    )
    count = service.states.change_state(ids, body.state, user_id=uid, changed_by=uid)
    verb = {"active": "resumed", "paused": "paused", "archived": "archived", "deleted": "deleted"}[
        body.state.value
    ]
    return {"message": f"Successfully {verb} {count} memories"}


@router.get("/{memory_id}", summary="Get one memory")
def get_memory(memory_id: str, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    memory = service.reads.get(memory_id, None if principal.is_admin else principal.user_id)
    return memory_detail(memory)


@router.get("/{memory_id}/access-log", summary="Who read a memory, when")
def access_log(
    memory_id: str,
    service: ServiceDep,
    principal: PrincipalDep,
    page: PageQuery = 1,
    page_size: SizeQuery = 10,
) -> dict[str, Any]:
    memory = service.reads.get(memory_id, None if principal.is_admin else principal.user_id)
    return service.queries.access_log_page(memory, page, page_size)


@router.put("/{memory_id}", summary="Edit a memory's text (re-embeds it)")
def update_memory(
    memory_id: str, body: UpdateRequest, service: ServiceDep, principal: PrincipalDep
) -> dict[str, Any]:
    if body.user_id is not None:
        acting_user(principal, body.user_id)
    memory = service.writes.update_memory(
        None if principal.is_admin else principal.user_id, memory_id, body.memory_content
    )
    return memory_row(memory)


@router.get("/{memory_id}/related", summary="Memories sharing categories with this one")
def related_memories(
    memory_id: str,
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    page: PageQuery = 1,
) -> dict[str, Any]:
    memory = service.reads.get(memory_id, None if principal.is_admin else principal.user_id)
    if user_id is not None:
        acting_user(principal, user_id)
    return service.queries.related_page(memory, page)


def _scope(body: SearchRequest) -> dict[str, Any]:
    """The scope filters of a search: as before scopes unless ``scope``, ``task`` or
    ``current_project`` is given (``project`` alone keeps its old meaning: only that project)."""
    if body.scope is None and body.task is None and body.current_project is None:
        return {"project": body.project}
    if body.scope in ("project", "task") or (body.scope is None and body.project is not None):
        return search_scope(body.scope or "project", body.project or body.current_project, body.task)
    return search_scope(body.scope, body.current_project or body.project, body.task)


def _user_or_internal_id(service: MemoryService, principal: PrincipalDep, user_id: str | None) -> str:
    """OpenMemory's archive route takes the internal users.id UUID; accept that or a user_id."""
    if user_id is None:
        return acting_user(principal, None)
    return acting_user(principal, service.queries.user_id_of(user_id))
