"""Keyset pagination shared by every list.

Items are ordered by id (time-ordered UUIDv7), newest first unless a list offers `sortOrder`. The cursor
is the last id of the page, so rows inserted while a client pages never make it repeat or skip an item.
The cursor is opaque (base64url JSON) and carries the direction it was made for.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from fastapi import Query
from pydantic import BaseModel, Field
from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from platpay.errors import invalid_field

T = TypeVar("T")

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


class Page(BaseModel, Generic[T]):
    """Paginated envelope: `nextCursor` is present only when `hasMore` is true."""

    data: list[T]
    hasMore: bool
    nextCursor: str | None = Field(default=None, description="pass as `cursor` to get the next page")
    totalCount: int = Field(description="items matching the filters, ignoring pagination")


@dataclass(frozen=True)
class PageParams:
    limit: int
    after_id: str | None
    descending: bool = True


def _encode_cursor(last_id: str, descending: bool) -> str:
    raw = json.dumps({"after": last_id, "desc": descending}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _decode_cursor(cursor: str, descending: bool) -> str:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        parsed = json.loads(raw)
        after = parsed["after"]
        cursor_desc = parsed["desc"]
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise invalid_field("cursor", "not a cursor returned by this list", location="query") from None
    if not isinstance(after, str) or not isinstance(cursor_desc, bool) or len(after) > 128:
        raise invalid_field("cursor", "not a cursor returned by this list", location="query")
    if cursor_desc != descending:
        raise invalid_field("cursor", "cursor was made for the other sortOrder", location="query")
    return after


def page_params(
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="page size (1-100, default 20)"),
    cursor: str | None = Query(None, max_length=512, description="`nextCursor` from the previous page"),
) -> PageParams:
    return PageParams(limit=limit, after_id=_decode_cursor(cursor, True) if cursor else None)


def sorted_page_params(
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="page size (1-100, default 20)"),
    cursor: str | None = Query(None, max_length=512, description="`nextCursor` from the previous page"),
    sort_order: Literal["asc", "desc"] = Query("desc", alias="sortOrder", description="by creation time"),
) -> PageParams:
    descending = sort_order == "desc"
    return PageParams(
        limit=limit, after_id=_decode_cursor(cursor, descending) if cursor else None, descending=descending
    )


@dataclass
class PageResult(Generic[T]):
    items: list[T]
    has_more: bool
    next_cursor: str | None
    total_count: int

    def envelope(self, data: list[Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"data": data, "hasMore": self.has_more, "totalCount": self.total_count}
        if self.next_cursor is not None:
            body["nextCursor"] = self.next_cursor
        return body


async def paginate(
    session: AsyncSession, stmt: Select[Any], *, id_column: InstrumentedAttribute[str], params: PageParams
) -> PageResult[Any]:
    """Run `stmt` (already filtered and tenant-scoped) as one page plus its total count.

    `stmt` must select a single ORM entity or column; rows come back as scalars.
    """
    total = await session.scalar(select(func.count()).select_from(stmt.order_by(None).subquery()))
    page_stmt = stmt
    if params.after_id is not None:
        page_stmt = page_stmt.where(
            id_column < params.after_id if params.descending else id_column > params.after_id
        )
    order = id_column.desc() if params.descending else id_column.asc()
    rows = list((await session.scalars(page_stmt.order_by(order).limit(params.limit + 1))).all())
    has_more = len(rows) > params.limit
    rows = rows[: params.limit]
    next_cursor = _encode_cursor(getattr(rows[-1], id_column.key), params.descending) if has_more else None
    return PageResult(items=rows, has_more=has_more, next_cursor=next_cursor, total_count=int(total or 0))


def paginate_items(items: Sequence[T], *, key: Callable[[T], str], params: PageParams) -> PageResult[T]:
    """One page of an in-memory catalog (already filtered and sorted in the requested direction), in the
    same envelope and cursor format as `paginate`. `key` is unique per item; the cursor carries the key of
    the page's last item, so the next page starts right after it."""
    start = 0
    if params.after_id is not None:
        keys = [key(item) for item in items]
        if params.after_id not in keys:
            raise invalid_field("cursor", "not a cursor returned by this list", location="query")
        start = keys.index(params.after_id) + 1
    page = list(items[start : start + params.limit])
    has_more = start + params.limit < len(items)
    next_cursor = _encode_cursor(key(page[-1]), params.descending) if has_more and page else None
    return PageResult(items=page, has_more=has_more, next_cursor=next_cursor, total_count=len(items))
