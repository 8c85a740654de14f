"""The bulk-import CSV reader: records with exact byte offsets whatever the pieces it is fed, resuming at any
record, strict refusal of what is not CSV text, and the header rules."""

from __future__ import annotations

import codecs

import pytest

from platpay.customers.bulk import csv_parser as bulk_csv
from platpay.customers.bulk.csv_parser import CsvFormatError, HeaderError, RecordParser

SAMPLE = (
    "umaAddress,platformCustomerId,customerType,fullName\r\n"
    '$a@x.test,p1,INDIVIDUAL,"Doe, Jane"\r\n'
    "\r\n"
    '$b@x.test,p2,INDIVIDUAL,"multi\nline ""quoted"""\n'
    ",,,\n"
    "$c@x.test,p3,BUSINESS,Zoë Ünïcödé\r"
    "$d@x.test,p4,INDIVIDUAL,last line without an end"
).encode()


def parse(data: bytes, *, offset: int = 0, piece: int | None = None) -> list[bulk_csv.Record]:
    parser = RecordParser(offset=offset)
    records = []
    step = piece or max(len(data), 1)
    for start in range(0, len(data), step):
        records += parser.feed(data[start : start + step])
    return records + parser.close()


class TestRecords:
    def test_cells_and_end_offsets(self):
        records = parse(SAMPLE)
        assert [r.cells for r in records] == [
            ["umaAddress", "platformCustomerId", "customerType", "fullName"],
            ["$a@x.test", "p1", "INDIVIDUAL", "Doe, Jane"],
            ["$b@x.test", "p2", "INDIVIDUAL", 'multi\nline "quoted"'],
            ["$c@x.test", "p3", "BUSINESS", "Zoë Ünïcödé"],
            ["$d@x.test", "p4", "INDIVIDUAL", "last line without an end"],
        ]
        ends = [r.end for r in records]
        assert SAMPLE[: ends[0]].endswith(b"fullName\r\n")
        assert SAMPLE[ends[2] :].startswith(b",,,\n$c@")  # a blank row is consumed with the next record
        assert SAMPLE[ends[3] :].startswith(b"$d@")
        assert ends[-1] == len(SAMPLE)

    @pytest.mark.parametrize("piece", [1, 2, 3, 5, 7, 64])
    def test_any_split_of_the_input_gives_the_same_records(self, piece):
        # splits CRLF pairs, multi-byte characters and quoted line breaks at every possible place
        assert parse(SAMPLE, piece=piece) == parse(SAMPLE)

    def test_resuming_at_any_record_end_reads_exactly_the_rest(self):
        records = parse(SAMPLE)
        for index, record in enumerate(records):
            assert parse(SAMPLE[record.end :], offset=record.end) == records[index + 1 :]

    def test_a_leading_bom_is_skipped_and_counted_in_offsets(self):
        data = codecs.BOM_UTF8 + b"a,b\nc,d\n"
        records = parse(data, piece=2)
        assert [r.cells for r in records] == [["a", "b"], ["c", "d"]]
        assert records[0].end == 3 + 4

    def test_blank_input_has_no_records(self):
        assert parse(b"") == []
        assert parse(b"\n\r\n  \n,,\n") == []


class TestRefusals:
    @pytest.mark.parametrize(
        ("data", "words"),
        [
            (b"a,b\n\xff\xfe,c\n", "not UTF-8"),
            (b"a,b\nc,\xc3", "ends inside a character"),
            (b"a,b\nc,d\x00e\n", "binary content"),
            (b"\x89PNG\r\n\x1a\n", "not UTF-8"),
            (b"a,b\n\x01\x02\x03\x04\n", "binary content"),
            (b'a,b\n"unterminated,c\n', "not valid CSV"),
            (b'a,b\n"x"y,c\n', "not valid CSV"),
            (b"a," + b"x" * (bulk_csv.MAX_LINE_CHARS + 10_000) + b"\n", "longer than"),
        ],
    )
    def test_what_is_not_csv_text_is_refused(self, data, words):
        with pytest.raises(CsvFormatError) as caught:
            parse(data, piece=4096)
        assert words in str(caught.value)


class TestHeader:
    def test_names_are_matched_case_insensitively_and_trimmed(self):
        columns = bulk_csv.read_header([" UMAaddress", "platformcustomerid ", "CustomerType", "fullName"])
        assert columns == ["umaAddress", "platformCustomerId", "customerType", "fullName"]

    @pytest.mark.parametrize(
        ("cells", "key", "value"),
        [
            (["umaAddress", "platformCustomerId", "customerType", "fulName"], "unknownColumns", ["fulName"]),
            (["umaAddress", "platformCustomerId", "customerType", ""], "blankColumnPositions", [4]),
            (
                ["umaAddress", "platformCustomerId", "customerType", "city", "City"],
                "repeatedColumns",
                ["city"],
            ),
            (["platformCustomerId", "fullName"], "missingColumns", ["umaAddress", "customerType"]),
        ],
    )
    def test_unusable_headers_name_the_columns(self, cells, key, value):
        with pytest.raises(HeaderError) as caught:
            bulk_csv.read_header(cells)
        assert caught.value.details[key] == value

    def test_columns_of_a_type_are_required_only_when_the_type_occurs(self):
        columns = [
            "umaAddress",
            "platformCustomerId",
            "customerType",
            "businessLegalName",
            "addressLine1",
            "city",
            "state",
            "postalCode",
            "country",
        ]
        bulk_csv.check_required_columns(columns, customer_types={"BUSINESS"})
        with pytest.raises(HeaderError) as caught:
            bulk_csv.check_required_columns(columns, customer_types={"BUSINESS", "INDIVIDUAL"})
        assert caught.value.details["missingColumnsFor"] == {"INDIVIDUAL": ["fullName", "birthDate"]}


class TestRowMapping:
    def test_a_row_becomes_the_post_customers_body(self):
        columns = [
            "customerType",
            "platformCustomerId",
            "umaAddress",
            "addressLine1",
            "city",
            "postalCode",
            "country",
            "businessLegalName",
            "businessTaxId",
            "description",
        ]
        cells = ["BUSINESS", "b1", "$b@x.test", "1 Main", " ", "94105", "US", "Acme", "12-3", "ignored"]
        assert bulk_csv.request_body(bulk_csv.row_values(columns, cells)) == {
            "customerType": "BUSINESS",
            "platformCustomerId": "b1",
            "umaAddress": "$b@x.test",
            "address": {"line1": "1 Main", "postalCode": "94105", "country": "US"},
            "businessInfo": {"legalName": "Acme", "taxId": "12-3"},
        }

    def test_api_fields_are_named_by_their_column(self):
        assert bulk_csv.column_of("address.line1") == "addressLine1"
        assert bulk_csv.column_of("businessInfo.legalName") == "businessLegalName"
        assert bulk_csv.column_of("birthDate") == "birthDate"
        assert bulk_csv.column_of("businessInfo.incorporatedOn") == "businessInfo.incorporatedOn"
