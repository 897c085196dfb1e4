"""The page and page-size parameters every paginated route shares, capped once.

A page's offset, ``(page - 1) * size``, goes to the database as a signed 64-bit integer;
SQLite fails on a larger one ("integer overflow"). ``MAX_PAGE`` is the largest page whose
offset fits at the largest size, so a page past the last one that fits is an empty page and a
page past ``MAX_PAGE`` is refused with 422 before any query runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from pydantic import Field

#: The largest page size any route accepts (OpenMemory's ``size``/``page_size`` maximum).
MAX_PAGE_SIZE = 100
#: The largest page number: ``(MAX_PAGE - 1) * MAX_PAGE_SIZE`` fits in a signed 64-bit integer.
MAX_PAGE = (2**63 - 1) // MAX_PAGE_SIZE

_PAGE_HELP = f"page number, from 1 to {MAX_PAGE}"

#: ``?page=`` on a GET route.
PageQuery = Annotated[int, Query(ge=1, le=MAX_PAGE, description=_PAGE_HELP)]
#: ``"page"`` in a JSON body.
PageField = Annotated[int, Field(ge=1, le=MAX_PAGE, description=_PAGE_HELP)]

_SIZE_HELP = f"items per page, from 1 to {MAX_PAGE_SIZE}"
#: ``?size=`` or ``?page_size=`` on a GET route.
SizeQuery = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description=_SIZE_HELP)]
#: ``"size"`` in a JSON body.
SizeField = Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE, description=_SIZE_HELP)]
