"""platpay/accounts/data/corridors.json is what tools/extract_corridors.py makes of the reference document
platpay follows (the compressed copy in tests/data): a new document, or a hand edit of the JSON, shows here
as a difference to review, not as a silent drift of the account formats."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from types import ModuleType

from tests.openapi_reference import REFERENCE_DOCUMENT

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "extract_corridors.py"
KEPT = ROOT / "tests" / "data" / f"{REFERENCE_DOCUMENT}.gz"
CORRIDORS = ROOT / "platpay" / "accounts" / "data" / "corridors.json"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("extract_corridors", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_corridor_data_is_the_extraction_of_the_followed_reference(tmp_path: Path) -> None:
    document = tmp_path / REFERENCE_DOCUMENT
    document.write_bytes(gzip.decompress(KEPT.read_bytes()))
    assert _tool().extract(document) == json.loads(CORRIDORS.read_text("utf-8"))


def test_the_new_formats_are_in_it() -> None:
    types = json.loads(CORRIDORS.read_text("utf-8"))["accountTypes"]
    assert types["INR_ACCOUNT"]["railRequirements"]["NEFT"] == ["accountNumber", "ifsc", "rail"]
    assert types["INR_ACCOUNT"]["fields"]["ifsc"]["pattern"] == "^[A-Z]{4}0[A-Z0-9]{6}$"
    assert types["GTQ_ACCOUNT"]["fields"]["bankName"]["required"] is True
    assert types["SGD_ACCOUNT"]["fields"]["bankName"]["required"] is False
    # prose after a rail's field list is not a field
    assert types["CNY_ACCOUNT"]["railRequirements"]["MOBILE_MONEY"] == ["bankName", "phoneNumber"]
    assert "PLASMA_WALLET" not in types
