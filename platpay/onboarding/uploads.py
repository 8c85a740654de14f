"""Uploads read as they stream (never held whole): a multipart/form-data body parsed chunk by chunk with
python-multipart's streaming parser, the file part written straight to the document store while it is
counted, hashed (SHA-256) and typed by its first bytes. A file over the limit is cut off at the chunk that
crosses it (413) and what was written is removed; so is a file whose content is not a PDF, JPEG or PNG,
whatever its name or declared type says."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from python_multipart.multipart import MultipartParser, parse_options_header

from platpay.errors import InvalidInput, UnsupportedMediaType, invalid_field
from platpay.onboarding.errors import DocumentTooLarge
from platpay.onboarding.storage import DocumentStore, Writer, new_key

# The file types a document may be, by their leading bytes (the file's content decides, nothing else).
MAGIC = (
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
)
_SNIFF_BYTES = max(len(prefix) for prefix, _ in MAGIC)
FIELD_MAX_BYTES = 2048
MAX_PARTS = 64  # each part must also be a distinct field the form names


def content_type_of(head: bytes) -> str | None:
    return next((kind for prefix, kind in MAGIC if head.startswith(prefix)), None)


@dataclass
class StoredFile:
    key: str
    size: int
    sha256: str
    content_type: str
    file_name: str


class FileSink:
    """One file on its way into the store."""

    def __init__(
        self, store: DocumentStore, key: str, *, max_bytes: int, file_name: str, field: str = "file"
    ) -> None:
        self.writer: Writer = store.writer(key)
        self.max_bytes = max_bytes
        self.file_name = file_name
        self.field = field
        self.size = 0
        self.digest = hashlib.sha256()
        self.head = b""
        self.content_type: str | None = None
        self.done = False

    async def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.size += len(chunk)
        if self.size > self.max_bytes:
            await self.abort()
            raise DocumentTooLarge(
                f"{self.field}: larger than the {self.max_bytes}-byte limit",
                details={
                    "fields": [{"field": self.field, "message": "too large"}],
                    "limitBytes": self.max_bytes,
                },
            )
        if self.content_type is None:
            self.head = (self.head + chunk)[:_SNIFF_BYTES]
            if len(self.head) >= _SNIFF_BYTES:
                self._check_type()
        self.digest.update(chunk)
        await self.writer.write(chunk)

    def _check_type(self) -> None:
        self.content_type = content_type_of(self.head)
        if self.content_type is None:
            raise invalid_field(self.field, "must be a PDF, JPEG or PNG file (judged by its content)")

    async def finish(self) -> StoredFile:
        if self.content_type is None:
            self._check_type()  # a file shorter than the longest signature
        await self.writer.commit()
        self.done = True
        return StoredFile(
            key=self.writer.key,
            size=self.size,
            sha256=self.digest.hexdigest(),
            content_type=self.content_type or "",
            file_name=self.file_name,
        )

    async def abort(self) -> None:
        if not self.done:
            self.done = True
            await self.writer.abort()


@dataclass
class ParsedForm:
    fields: dict[str, str] = field(default_factory=dict)
    files: dict[str, StoredFile] = field(default_factory=dict)

    @property
    def file(self) -> StoredFile | None:
        return self.files.get("file")

    def keys(self) -> list[str]:
        return [stored.key for stored in self.files.values()]


def _boundary(content_type: str | None) -> bytes:
    kind, options = parse_options_header(content_type or "")
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise UnsupportedMediaType(
            "send the body as multipart/form-data (the file in `file`, metadata in the other fields)",
            details={"expected": "multipart/form-data", "received": kind.decode("latin-1") or None},
        )
    return boundary


async def parse(
    chunks: AsyncIterator[bytes],
    *,
    content_type: str | None,
    store: DocumentStore,
    tenant_id: str,
    max_file_bytes: int,
    allowed_fields: frozenset[str],
    file_fields: frozenset[str] = frozenset({"file"}),
) -> ParsedForm:
    """The form's text fields and its files (parts named in `file_fields`), each file already committed to
    the store under a new key (ParsedForm.files; the caller deletes them if it refuses the form). Anything
    refused while parsing removes what was written."""
    events: list[tuple[str, bytes]] = []
    header_field = bytearray()
    header_value = bytearray()
    headers: dict[bytes, bytes] = {}

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header_field.extend(data[start:end])

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header_value.extend(data[start:end])

    def on_header_end() -> None:
        headers[bytes(header_field).lower()] = bytes(header_value)
        header_field.clear()
        header_value.clear()

    def on_headers_finished() -> None:
        events.append(("begin", headers.get(b"content-disposition", b"")))
        headers.clear()

    def on_part_data(data: bytes, start: int, end: int) -> None:
        events.append(("data", bytes(data[start:end])))

    def on_part_end() -> None:
        events.append(("end", b""))

    parser = MultipartParser(
        _boundary(content_type),
        {
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
        },
    )
    form = ParsedForm()
    sink: FileSink | None = None  # the file part being read
    current: str | None = None  # the text field being read
    value = bytearray()
    parts = 0
    try:
        async for chunk in chunks:
            try:
                parser.write(chunk)
            except Exception as error:  # python-multipart's parse errors
                raise InvalidInput(f"malformed multipart body: {error}") from None
            for kind, data in events:
                if kind == "begin":
                    parts += 1
                    _, options = parse_options_header(data)
                    name = options.get(b"name", b"").decode("utf-8", "replace")
                    if parts > MAX_PARTS or name not in allowed_fields | file_fields:
                        raise invalid_field(name or "(unnamed part)", "is not a field of this form")
                    if name in form.fields or name in form.files:
                        raise invalid_field(name, "is given twice")
                    if name in file_fields:
                        raw_name = options.get(b"filename")
                        if raw_name is None:
                            raise invalid_field(name, "must be a file part (with a filename)")
                        file_name = raw_name.decode("utf-8", "replace").replace("\\", "/").rsplit("/", 1)[-1]
                        if not file_name:  # a browser's empty file input: no file chosen
                            sink = None
                            current = None
                            continue
                        sink = FileSink(
                            store,
                            new_key(tenant_id),
                            max_bytes=max_file_bytes,
                            file_name=file_name[:255],
                            field=name,
                        )
                    else:
                        current = name
                elif kind == "data":
                    if sink is not None:
                        await sink.write(data)
                    elif current is not None:
                        value.extend(data)
                        if len(value) > FIELD_MAX_BYTES:
                            raise invalid_field(current, f"is longer than {FIELD_MAX_BYTES} bytes")
                elif sink is not None:
                    form.files[sink.field] = await sink.finish()
                    sink = None
                elif current is not None:
                    try:
                        form.fields[current] = value.decode("utf-8")
                    except UnicodeDecodeError:
                        raise invalid_field(current, "must be UTF-8 text") from None
                    value.clear()
                    current = None
            events.clear()
        parser.finalize()
        if sink is not None:
            raise InvalidInput("malformed multipart body: it ends inside a file part")
    except BaseException:
        if sink is not None:
            await sink.abort()
        for stored in form.files.values():
            await store.delete(stored.key)
        raise
    return form
