"""The bulk-import CSV (SPEC §2 "CSV columns for bulk upload"): a streaming record parser that knows the
byte offset where every record ends, the column set, and how a row becomes a POST /customers body.
Pure: no I/O, no database.

Rules a file must follow (docs/customers-and-accounts.md, "Bulk customer import", documents them for users):
- UTF-8 text (a leading BOM is allowed), comma-separated, `"` quoting (RFC 4180); quoted cells may hold
  line breaks; lines end in LF, CRLF or CR. Control characters other than tab, CR and LF mean the file is
  binary. One physical line holds at most MAX_LINE_CHARS characters.
- The first non-blank record is the header. Column names are matched case-insensitively, surrounding
  spaces ignored; unknown, blank and repeated column names are refused (a typo must not drop data).
- Blank lines, and rows whose cells are all blank, are skipped: they are not data rows and get no number.
- A cell holding only spaces is empty; other cells are passed on verbatim (validated as the API would).
"""

from __future__ import annotations

import codecs
import csv
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

MAX_LINE_CHARS = 131_072  # csv's own limit on one field is the same
_LINE_END = re.compile(r"\r\n|\r|\n")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")

ALWAYS_REQUIRED = ("umaAddress", "platformCustomerId", "customerType")
REQUIRED_FOR_TYPE: dict[str, tuple[str, ...]] = {
    "INDIVIDUAL": ("fullName", "birthDate", "addressLine1", "city", "state", "postalCode", "country"),
    "BUSINESS": ("businessLegalName", "addressLine1", "city", "state", "postalCode", "country"),
}
OPTIONAL = (
    "addressLine2",
    "email",
    "businessRegistrationNumber",
    "businessTaxId",
    "platformAccountId",
    "description",
    # platpay's, beyond the reference's columns: the August document's single-valued customer fields. Lists
    # (source-of-funds categories, countries) do not fit a cell, and an identifier is not taken from a file
    # (the upload is stored for the import; the identifier is only ever kept sealed: customers/identity.py).
    "phoneNumber",
    "pepStatus",
    "annualIncomeRange",
    "netWorthRange",
    "businessEntityType",
    "businessNaicsCode",
    "businessPrimaryContactFirstName",
    "businessPrimaryContactLastName",
)
# Accepted so that files made for the reference API load, but a customer has no such fields.
IGNORED = frozenset({"platformAccountId", "description"})
KNOWN_COLUMNS = tuple(
    dict.fromkeys(
        (*ALWAYS_REQUIRED, *REQUIRED_FOR_TYPE["INDIVIDUAL"], *REQUIRED_FOR_TYPE["BUSINESS"], *OPTIONAL)
    )
)
_CANONICAL = {name.lower(): name for name in KNOWN_COLUMNS}

# Where a column goes in a POST /customers body (camelCase, as the API receives it).
_TOP_LEVEL = (
    "customerType",
    "platformCustomerId",
    "umaAddress",
    "fullName",
    "birthDate",
    "email",
    "phoneNumber",
    "pepStatus",
    "annualIncomeRange",
    "netWorthRange",
)
_ADDRESS = {
    "addressLine1": "line1",
    "addressLine2": "line2",
    "city": "city",
    "state": "state",
    "postalCode": "postalCode",
    "country": "country",
}
_BUSINESS_INFO = {
    "businessLegalName": "legalName",
    "businessTaxId": "taxId",
    "businessRegistrationNumber": "registrationNumber",
    "businessEntityType": "entityType",
    "businessNaicsCode": "naicsCode",
    "businessPrimaryContactFirstName": "primaryContactFirstName",
    "businessPrimaryContactLastName": "primaryContactLastName",
}
# The other way: an API field path named by the column the user fixes in the file.
_COLUMN_OF_FIELD = {
    **{name: name for name in _TOP_LEVEL},
    **{f"address.{key}": column for column, key in _ADDRESS.items()},
    **{f"businessInfo.{key}": column for column, key in _BUSINESS_INFO.items()},
}


class CsvFormatError(ValueError):
    """The bytes are not a CSV text file we can read; `offset` is about where that shows (bytes)."""

    def __init__(self, message: str, *, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class HeaderError(ValueError):
    """The header row is unusable; `details` names the columns concerned."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.details = details


@dataclass(frozen=True, slots=True)
class Record:
    cells: list[str]
    end: int  # byte offset just past this record: where the next one starts


class _NeedMore(Exception):
    """The input fed so far ends inside a record."""


class _Lines:
    """Complete lines for csv.reader, remembering those of the record being read so that they can be
    replayed when the input runs out mid-record (csv.reader restarts every record from scratch)."""

    def __init__(self) -> None:
        self.ready: deque[tuple[str, int]] = deque()  # (line, its length in bytes)
        self.taken: list[tuple[str, int]] = []
        self.closed = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        if not self.ready:
            if self.closed:
                raise StopIteration
            raise _NeedMore
        item = self.ready.popleft()
        self.taken.append(item)
        return item[0]

    def rewind(self) -> None:
        self.ready.extendleft(reversed(self.taken))
        self.taken.clear()

    def consume(self) -> int:
        size = sum(length for _, length in self.taken)
        self.taken.clear()
        return size


class RecordParser:
    """Push parser: `feed(data)` and `close()` return the records completed so far with the byte offset
    where each ends, so that a reader may stop after any record and a later one resume exactly there
    (`RecordParser(offset=record.end)` fed the bytes from that offset on). Strict: text that is not UTF-8,
    binary content, bad quoting or an over-long line raise CsvFormatError. Blank records are consumed but
    not returned."""

    def __init__(self, *, offset: int = 0) -> None:
        self.offset = offset  # end of the last record consumed, in bytes
        self._fed = offset  # bytes fed so far (for error positions)
        self._at_start = offset == 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._pending = ""  # an incomplete last line
        self._lines = _Lines()
        self._reader = csv.reader(self._lines, strict=True)

    def feed(self, data: bytes) -> list[Record]:
        try:
            text = self._decoder.decode(data)
        except UnicodeDecodeError as error:
            raise CsvFormatError(
                f"the file is not UTF-8 text (invalid byte at offset {self._fed + error.start})",
                offset=self._fed + error.start,
            ) from None
        if self._at_start and text:
            self._at_start = False
            if text[0] == "\ufeff":  # a byte order mark: not part of the first column's name
                text = text[1:]
                self.offset += len(codecs.BOM_UTF8)
        self._check_text(text)
        self._fed += len(data)
        self._split(text, final=False)
        return self._records()

    def close(self) -> list[Record]:
        try:
            text = self._decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise CsvFormatError(
                "the file is not UTF-8 text (it ends inside a character)", offset=self._fed
            ) from None
        self._split(text, final=True)
        self._lines.closed = True
        return self._records()

    def _check_text(self, text: str) -> None:
        found = _CONTROL.search(text)
        if found:
            at = self._fed + len(text[: found.start()].encode())
            raise CsvFormatError(
                f"the file holds binary content (control character U+{ord(found.group()):04X} at byte {at}), "
                "not CSV text",
                offset=at,
            )

    def _split(self, text: str, *, final: bool) -> None:
        buffer = self._pending + text if self._pending else text
        ready = self._lines.ready
        start = 0
        for match in _LINE_END.finditer(buffer):
            end = match.end()
            if not final and end == len(buffer) and match.group() == "\r":
                break  # perhaps the first half of a CRLF split between two feeds
            line = buffer[start:end]
            ready.append((line, len(line) if line.isascii() else len(line.encode())))
            start = end
        rest = buffer[start:]
        if len(rest) > MAX_LINE_CHARS:
            raise CsvFormatError(
                f"a line is longer than {MAX_LINE_CHARS} characters: not a CSV of customers",
                offset=self.offset,
            )
        if final and rest:
            ready.append((rest, len(rest) if rest.isascii() else len(rest.encode())))
            rest = ""
        self._pending = rest

    def _records(self) -> list[Record]:
        records: list[Record] = []
        lines = self._lines
        while True:
            try:
                cells = next(self._reader)
            except _NeedMore:
                lines.rewind()
                return records
            except StopIteration:
                return records
            except csv.Error as error:
                raise CsvFormatError(
                    f"the file is not valid CSV after byte {self.offset}: {error}", offset=self.offset
                ) from None
            self.offset += lines.consume()
            if any(cell.strip() for cell in cells):
                records.append(Record(cells, self.offset))


def read_header(cells: list[str]) -> list[str]:
    """The header's column names in canonical spelling; HeaderError if a name is blank, unknown or
    repeated, or a column every row needs is missing."""
    columns: list[str] = []
    unknown: list[str] = []
    blank: list[int] = []
    for position, cell in enumerate(cells, start=1):
        name = cell.strip()
        if not name:
            blank.append(position)
        canonical = _CANONICAL.get(name.lower())
        if canonical is None and name:
            unknown.append(name)
        columns.append(canonical or name)
    if blank:
        raise HeaderError(f"header column(s) {blank} have no name", {"blankColumnPositions": blank})
    if unknown:
        raise HeaderError(
            f"unknown column(s) {unknown}; the columns are {list(KNOWN_COLUMNS)}",
            {"unknownColumns": unknown, "knownColumns": list(KNOWN_COLUMNS)},
        )
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if repeated:
        raise HeaderError(f"column(s) {repeated} appear more than once", {"repeatedColumns": repeated})
    check_required_columns(columns, customer_types=())
    return columns


def check_required_columns(columns: list[str], *, customer_types: tuple[str, ...] | set[str]) -> None:
    """The columns every row needs, plus those of each customer type that occurs in the file."""
    missing: dict[str, list[str]] = {}
    always = [name for name in ALWAYS_REQUIRED if name not in columns]
    if always:
        missing["ALL"] = always
    for customer_type in sorted(customer_types):
        needed = [name for name in REQUIRED_FOR_TYPE[customer_type] if name not in columns]
        if needed:
            missing[customer_type] = needed
    if missing:
        names = list(dict.fromkeys(name for group in missing.values() for name in group))
        why = "; ".join(
            f"{'every row' if group == 'ALL' else f'{group} rows'} need {', '.join(names_)}"
            for group, names_ in missing.items()
        )
        raise HeaderError(
            f"missing required column(s) {names} ({why})",
            {"missingColumns": names, "missingColumnsFor": missing},
        )


def row_values(columns: list[str], cells: list[str]) -> dict[str, str]:
    """The row's non-empty cells by column, ignored columns left out."""
    return {
        name: cell for name, cell in zip(columns, cells, strict=False) if cell.strip() and name not in IGNORED
    }


def missing_cells(values: dict[str, str]) -> list[tuple[str, str]]:
    """(column, message) for every required cell left empty in this row."""
    problems = [(name, "is required") for name in ALWAYS_REQUIRED if name not in values]
    customer_type = values.get("customerType")
    for name in REQUIRED_FOR_TYPE.get(customer_type or "", ()):
        if name not in values:
            problems.append((name, f"is required for {customer_type} customers"))
    return problems


def request_body(values: dict[str, str]) -> dict[str, Any]:
    """The POST /customers body this row stands for."""
    body: dict[str, Any] = {name: values[name] for name in _TOP_LEVEL if name in values}
    address = {key: values[column] for column, key in _ADDRESS.items() if column in values}
    if address:
        body["address"] = address
    business_info = {key: values[column] for column, key in _BUSINESS_INFO.items() if column in values}
    if business_info:
        body["businessInfo"] = business_info
    return body


def column_of(field: str) -> str:
    """An API field path (`address.line1`) named by its CSV column (`addressLine1`) where it has one."""
    return _COLUMN_OF_FIELD.get(field, field)
