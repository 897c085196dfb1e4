"""mem0 filter dicts → Qdrant Edge filters, so every condition is evaluated inside Edge.

The accepted shapes are those mem0's ``Memory.search``/``get_all`` pass to a vector store:

    {"user_id": "alice"}                         exact match (str or int)
    {"state": {"in": ["active", "paused"]}}      in / nin
    {"state": {"ne": "deleted"}}                 eq / ne
    {"project": {"in_or_empty": ["repo"]}}       one of these, or no value at all (a scope)
    {"$not_ids": ["<uuid>", ...]}                points left out by id (given to a session)
    {"expires_at": {"gte": 10, "lt": 20}}        numeric range (gt, gte, lt, lte)
    {"created_at": {"gte": "2026-01-01"}}        ISO-8601 strings make a datetime range
    {"app_id": "*"}                              wildcard: no condition, as in mem0's qdrant
    {"AND": [...], "OR": [...], "NOT": [...]}    nested (mem0 also spells them $and/$or/$not)

Several keys in one dict must all hold. Booleans are refused: qdrant-edge-py 0.9 turns
``MatchValue(True)`` into the integer 1, which never matches a stored ``true``; store such
flags as keywords. A bad filter raises :class:`BadInput`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from qdrant_edge import (
    FieldCondition,
    Filter,
    HasIdCondition,
    IsEmptyCondition,
    MatchAny,
    MatchExcept,
    MatchValue,
    RangeDateTime,
    RangeFloat,
)

from ..errors import BadInput

_LOGICAL = {"AND": "AND", "OR": "OR", "NOT": "NOT", "$and": "AND", "$or": "OR", "$not": "NOT"}
_RANGE_OPERATORS = ("gt", "gte", "lt", "lte")
#: Ours, not mem0's: a value among these or none (the field missing or null), as a scoped
#: search keeps a project's memories and those of no project (search/planning.py).
IN_OR_EMPTY = "in_or_empty"
_OPERATORS = {"eq", "ne", "in", "nin", IN_OR_EMPTY, *_RANGE_OPERATORS}
#: Ours too: the ids of points to leave out (memories a session was already given).
NOT_IDS = "$not_ids"
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?)?$")


def edge_filter(filters: Mapping[str, Any] | None) -> Filter | None:
    """The Edge :class:`Filter` for a mem0 filter dict, or ``None`` when nothing filters."""
    if not filters:
        return None
    if not isinstance(filters, Mapping):
        raise BadInput(f"filters must be a mapping of field to condition, got {type(filters).__name__}")
    must: list[Any] = []
    must_not: list[Any] = []
    seen_logical: set[str] = set()
    for key, value in filters.items():
        if key == NOT_IDS:
            if value:
                must_not.append(HasIdCondition(set(point_ids(value))))
            continue
        logical = _LOGICAL.get(key)
        if logical is None:
            must_conditions, must_not_conditions = _field_conditions(key, value)
            must.extend(must_conditions)
            must_not.extend(must_not_conditions)
            continue
        # mem0 rewrites OR/NOT to $or/$not but keeps the originals beside them: count once.
        if logical in seen_logical:
            continue
        seen_logical.add(logical)
        branches = [edge_filter(item) for item in _filter_list(key, value)]
        subfilters = [branch for branch in branches if branch is not None]
        if logical == "AND":
            must.extend(subfilters)
        elif logical == "OR" and subfilters and len(subfilters) == len(branches):
            # Nested, so that an OR inside an AND stays its own group; a branch that matches
            # everything (a wildcard) makes the whole OR match everything, hence no condition.
            must.append(Filter(should=list(subfilters)))
        elif logical == "NOT":
            must_not.extend(subfilters)
    if not (must or must_not):
        return None
    return Filter(must=must or None, must_not=must_not or None)


def point_ids(values: Any) -> list[str]:
    """``$not_ids``' values as canonical UUID strings (a bad one is refused)."""
    if not isinstance(values, list | tuple | set | frozenset):
        raise BadInput(f"filter {NOT_IDS!r} must be a list of memory ids")
    try:
        return [str(uuid.UUID(str(value))) for value in values]
    except ValueError as exc:
        raise BadInput(f"filter {NOT_IDS!r}: {exc}") from None


def _filter_list(key: str, value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise BadInput(f"filter {key!r} must be a list of filter dicts")
    return value


def _field_conditions(key: str, value: Any) -> tuple[list[Any], list[Any]]:
    """(must, must_not) conditions for one field."""
    if not isinstance(key, str) or not key:
        raise BadInput(f"filter field names must be non-empty strings, got {key!r}")
    if isinstance(value, Mapping):
        return _operator_conditions(key, value)
    if isinstance(value, list):
        return [_any_of(key, value)], []
    if value == "*":
        return [], []
    return [_equals(key, value)], []


def _operator_conditions(key: str, operators: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    unknown = set(operators) - _OPERATORS
    if unknown or not operators:
        raise BadInput(
            f"filter on {key!r}: unsupported operator(s) {sorted(map(str, unknown)) or '(none)'}; "
            f"supported: {sorted(_OPERATORS)}"
        )
    must: list[Any] = []
    must_not: list[Any] = []
    if "eq" in operators:
        must.append(_equals(key, operators["eq"]))
    if "ne" in operators:
        must_not.append(_equals(key, operators["ne"]))
    if "in" in operators:
        must.append(_any_of(key, operators["in"]))
    if "nin" in operators:
        values = _match_values(key, operators["nin"])
        must.append(FieldCondition(key, match=MatchExcept(values)))
    if IN_OR_EMPTY in operators:
        must.append(Filter(should=[_any_of(key, operators[IN_OR_EMPTY]), IsEmptyCondition(key)]))
    bounds = {name: operators[name] for name in _RANGE_OPERATORS if name in operators}
    if bounds:
        must.append(_range(key, bounds))
    return must, must_not


def _equals(key: str, value: Any) -> FieldCondition:
    if isinstance(value, bool):
        raise BadInput(f"filter on {key!r}: booleans cannot be matched in Qdrant Edge; store a keyword")
    if isinstance(value, str | int):
        return FieldCondition(key, match=MatchValue(value))
    if isinstance(value, float):
        return FieldCondition(key, range=RangeFloat(gte=value, lte=value))
    raise BadInput(f"filter on {key!r}: cannot match a value of type {type(value).__name__}")


def _any_of(key: str, values: Any) -> FieldCondition:
    return FieldCondition(key, match=MatchAny(_match_values(key, values)))


def _match_values(key: str, values: Any) -> list[Any]:
    if not isinstance(values, list | tuple) or not values:
        raise BadInput(f"filter on {key!r}: in/nin need a non-empty list")
    if all(isinstance(item, str) for item in values):
        return list(values)
    if all(isinstance(item, int) and not isinstance(item, bool) for item in values):
        return list(values)
    raise BadInput(f"filter on {key!r}: in/nin lists must be all strings or all integers")


def _range(key: str, bounds: dict[str, Any]) -> FieldCondition:
    if all(isinstance(value, str) and _ISO_DATETIME.match(value) for value in bounds.values()):
        return FieldCondition(key, range=RangeDateTime(**bounds))
    if all(isinstance(value, int | float) and not isinstance(value, bool) for value in bounds.values()):
        return FieldCondition(key, range=RangeFloat(**{name: float(v) for name, v in bounds.items()}))
    raise BadInput(f"filter on {key!r}: range bounds must be all numbers or all ISO-8601 datetimes")
