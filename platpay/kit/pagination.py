"""Keyset pagination shared by every list.

Items are ordered by id (time-ordered UUIDv7), newest first unless a list offers `sortOrder`. The cursor
is the last id of the page, so rows inserted while a client pages never make it repeat or skip an item.

The cursor is opaque: base64url JSON naming the list it came from (a short digest of its route), the
direction it was made for and the last id, followed by an HMAC under a key derived from the master key. A
cursor from another list, for the other direction, or edited in any way is a 400 naming `cursor`, instead
of a silently empty or misplaced page.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from fastapi import Query, Request
from pydantic import BaseModel, Field
from sqlalchemy import Select, and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from platpay.errors import invalid_field
from platpay.kit.crypto.sealing import load_master_key

T = TypeVar("T")

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
_MAC_BYTES = 16
_NOT_A_CURSOR = "not a cursor returned by this list"


class Page(BaseModel, Generic[T]):
    """Paginated envelope: `nextCursor` is present only when `hasMore` is true."""

    data: list[T]
    hasMore: bool
    nextCursor: str | None = Field(default=None, description="pass as `cursor` to get the next page")
    totalCount: int = Field(description="items matching the filters, ignoring pagination")


def _b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _b64d(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class CursorBinding:
    """What a cursor is bound to: one list (`list_tag`) and the key that signs it."""

    list_tag: str
    key: bytes = field(repr=False)

    def encode(self, last_id: str, descending: bool) -> str:
        payload = json.dumps({"l": self.list_tag, "a": last_id, "d": descending}, separators=(",", ":"))
        raw = payload.encode()
        return f"{_b64e(raw)}.{_b64e(self._mac(raw))}"

    def decode(self, cursor: str, descending: bool) -> str:
        """The last id the cursor carries, or a 400 naming `cursor` if this list did not make it."""
        try:
            payload_part, mac_part = cursor.split(".")
            raw, mac = _b64d(payload_part), _b64d(mac_part)
        except (ValueError, binascii.Error):
            raise invalid_field("cursor", _NOT_A_CURSOR, location="query") from None
        if not hmac.compare_digest(mac, self._mac(raw)):
            raise invalid_field("cursor", _NOT_A_CURSOR, location="query")
        try:
            parsed = json.loads(raw)
            list_tag, after, cursor_desc = parsed["l"], parsed["a"], parsed["d"]
        except (ValueError, KeyError, TypeError):
            raise invalid_field("cursor", _NOT_A_CURSOR, location="query") from None
        if list_tag != self.list_tag:
            raise invalid_field("cursor", "cursor was returned by another list", location="query")
        if not isinstance(after, str) or not isinstance(cursor_desc, bool):
            raise invalid_field("cursor", _NOT_A_CURSOR, location="query")
        if cursor_desc != descending:
            raise invalid_field("cursor", "cursor was made for the other sortOrder", location="query")
        return after

    def _mac(self, raw: bytes) -> bytes:
        return hmac.new(self.key, raw, hashlib.sha256).digest()[:_MAC_BYTES]


@functools.lru_cache(maxsize=16)
def _cursor_key(configured_master_key: str | None, var_dir: Path) -> bytes:
    """Derived from the master key, so every process of a deployment accepts the cursors of the others."""
    master = load_master_key(configured_master_key, var_dir)
    return hmac.new(master, b"platpay pagination cursor v1", hashlib.sha256).digest()


# Lists paged outside a request (none today) get cursors that only this process accepts.
_UNBOUND = CursorBinding(list_tag="-", key=secrets.token_bytes(32))


def list_tag(request: Request) -> str:
    """A short, stable name for the list `request` is for: a digest of its route template."""
    route = request.scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None) or request.url.path
    return hashlib.sha256(template.encode()).hexdigest()[:10]


def cursor_binding(request: Request) -> CursorBinding:
    settings = request.app.state.settings
    return CursorBinding(list_tag=list_tag(request), key=_cursor_key(settings.master_key, settings.var_dir))


@dataclass(frozen=True)
class PageParams:
    limit: int
    after_id: str | None
    descending: bool = True
    binding: CursorBinding = _UNBOUND

    def next_cursor(self, last_id: str) -> str:
        return self.binding.encode(last_id, self.descending)


async def page_params(
    request: Request,
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="page size (1-100, default 20)"),
    cursor: str | None = Query(None, max_length=512, description="`nextCursor` from the previous page"),
) -> PageParams:
    binding = cursor_binding(request)
    return PageParams(limit=limit, after_id=binding.decode(cursor, True) if cursor else None, binding=binding)


async def sorted_page_params(
    request: Request,
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="page size (1-100, default 20)"),
    cursor: str | None = Query(None, max_length=512, description="`nextCursor` from the previous page"),
    sort_order: Literal["asc", "desc"] = Query("desc", alias="sortOrder", description="by creation time"),
) -> PageParams:
    descending = sort_order == "desc"
    binding = cursor_binding(request)
    return PageParams(
        limit=limit,
        after_id=binding.decode(cursor, descending) if cursor else None,
        descending=descending,
        binding=binding,
    )


@dataclass
class PageResult(Generic[T]):
    items: list[T]
    has_more: bool
    next_cursor: str | None
    total_count: int | None  # None: a list that does not count (GET /transactions), no totalCount

    def envelope(self, data: list[Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"data": data, "hasMore": self.has_more}
        if self.total_count is not None:
            body["totalCount"] = self.total_count
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
    next_cursor = params.next_cursor(getattr(rows[-1], id_column.key)) if has_more else None
    return PageResult(items=rows, has_more=has_more, next_cursor=next_cursor, total_count=int(total or 0))


def keyset_page(
    stmt: Select[Any],
    *,
    created_at: InstrumentedAttribute[Any],
    id_column: InstrumentedAttribute[str],
    after: tuple[Any, str] | None,
    descending: bool,
    limit: int,
) -> Select[Any]:
    """`stmt` limited to `limit` rows in (created_at, id) order, strictly after the position `after` (a list
    ordered by creation time, merged from several tables: GET /transactions). `created_at` bounds the index
    range on its own; the id breaks ties between rows created at the same instant."""
    if after is not None:
        at, last_id = after
        if descending:
            stmt = stmt.where(and_(created_at <= at, or_(created_at < at, id_column < last_id)))
        else:
            stmt = stmt.where(and_(created_at >= at, or_(created_at > at, id_column > last_id)))
    order = (created_at.desc(), id_column.desc()) if descending else (created_at.asc(), id_column.asc())
    return stmt.order_by(*order).limit(limit)


def paginate_items(items: Sequence[T], *, key: Callable[[T], str], params: PageParams) -> PageResult[T]:
    """One page of an in-memory catalog (already filtered and sorted in the requested direction), in the
    same envelope and cursor format as `paginate`. `key` is unique per item; the cursor carries the key of
    the page's last item, so the next page starts right after it."""
    start = 0
    if params.after_id is not None:
        keys = [key(item) for item in items]
        if params.after_id not in keys:
            raise invalid_field("cursor", _NOT_A_CURSOR, location="query")
        start = keys.index(params.after_id) + 1
    page = list(items[start : start + params.limit])
    has_more = start + params.limit < len(items)
    next_cursor = params.next_cursor(key(page[-1])) if has_more and page else None
    return PageResult(items=page, has_more=has_more, next_cursor=next_cursor, total_count=len(items))


async def paginate_uncounted(
    session: AsyncSession, stmt: Select[Any], *, id_column: InstrumentedAttribute[str], params: PageParams
) -> PageResult[Any]:
    """`paginate` without the total: one statement a page (`limit + 1` rows after the cursor's id), for a
    list that shows no totalCount (a search). `total_count` is None."""
    if params.after_id is not None:
        stmt = stmt.where(id_column < params.after_id if params.descending else id_column > params.after_id)
    order = id_column.desc() if params.descending else id_column.asc()
    rows = list((await session.scalars(stmt.order_by(order).limit(params.limit + 1))).all())
    has_more = len(rows) > params.limit
    rows = rows[: params.limit]
    next_cursor = params.next_cursor(getattr(rows[-1], id_column.key)) if has_more else None
    return PageResult(items=rows, has_more=has_more, next_cursor=next_cursor, total_count=None)
