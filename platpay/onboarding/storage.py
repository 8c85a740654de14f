"""Where documents' files live: a store behind an interface (kit/providers.py slot PLATPAY_DOCUMENT_STORE),
never database rows. `local` (the default) keeps each file under `<PLATPAY_VAR_DIR>/documents/`; an
S3-compatible store is an adapter with the same three operations (`package.module:factory`).

A file is written through a `Writer` as it arrives (nothing holds it whole) and becomes visible under its
key only on `commit`; `abort` leaves nothing behind. Keys are opaque to the store: `<tenant>/<random>`.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

from platpay.config import Settings
from platpay.kit.providers import Slot

READ_CHUNK_BYTES = 256 * 1024


class Writer(Protocol):
    key: str

    async def write(self, chunk: bytes) -> None: ...

    async def commit(self) -> None: ...

    async def abort(self) -> None: ...


class DocumentStore(Protocol):
    def writer(self, key: str) -> Writer: ...

    def read(self, key: str) -> AsyncIterator[bytes]: ...

    async def delete(self, key: str) -> None: ...


DOCUMENT_STORE: Slot[DocumentStore] = Slot("document_store", default="local")


def new_key(tenant_id: str) -> str:
    safe_tenant = "".join(ch if ch.isalnum() else "_" for ch in tenant_id)
    return f"{safe_tenant}/{secrets.token_hex(16)}"


class _LocalWriter:
    def __init__(self, path: Path, key: str) -> None:
        self.key = key
        self.path = path
        self.partial = path.with_name(path.name + ".part")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(self.partial, "wb")  # noqa: SIM115 (closed by commit or abort)

    async def write(self, chunk: bytes) -> None:
        # Local disk writes of a request's chunks (tens of KiB) land in the page cache: cheaper inline than
        # a thread hop per chunk.
        self.file.write(chunk)

    async def commit(self) -> None:
        self.file.close()
        os.replace(self.partial, self.path)

    async def abort(self) -> None:
        self.file.close()
        self.partial.unlink(missing_ok=True)


class LocalDocumentStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        if ".." in key or key.startswith("/"):
            raise ValueError(f"not a document key: {key!r}")
        return self.root / key

    def writer(self, key: str) -> Writer:
        return _LocalWriter(self._path(key), key)

    async def read(self, key: str) -> AsyncIterator[bytes]:
        # local disk reads of 256 KiB land in (or come from) the page cache: inline, like the writes
        with open(self._path(key), "rb") as file:  # noqa: ASYNC230
            while chunk := file.read(READ_CHUNK_BYTES):
                yield chunk

    async def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)


@DOCUMENT_STORE.implementation("local")
def _local(settings: Settings) -> DocumentStore:
    return LocalDocumentStore(Path(settings.var_dir) / "documents")
