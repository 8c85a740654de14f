"""The documentation stays true: the README is a short front door with the two set-up commands, every
relative link of README.md, CONTRIBUTING.md and docs/ reaches a file (and a heading, when it names one),
the generated parts of docs/configuration.md and docs/errors.md are what tools/gen_docs.py writes from the
source now, and docs/sandbox.md's table names every magic value the sandbox providers read."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")])
README_MAX_LINES = 200
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outside_code(text: str) -> str:
    """The text without fenced code blocks and inline code spans (links there are examples)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _outside_code(path.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES, "README.md grew: move the detail to docs/"
    setup = re.search(r"## Set up\n\n```sh\n(.*?)```", text, re.S)
    assert setup, "README.md lost its Set up block"
    commands = [line.split("#", 1)[0].strip() for line in setup.group(1).splitlines()]
    assert commands == ["make run", "make test"]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    broken = []
    for target in LINK.findall(_outside_code(document.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not ours to check
        file_part, _, anchor = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no such heading)")
    assert broken == [], f"{document.relative_to(ROOT)}: broken links"


def test_every_guide_is_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    guides = {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")}
    assert guides - linked == set()


@pytest.mark.parametrize("name", ["configuration.md", "errors.md"])
def test_the_generated_docs_are_current(name: str) -> None:
    gen_docs = _gen_docs()
    path = ROOT / "docs" / name
    current = path.read_text(encoding="utf-8")
    assert gen_docs.rendered(path, current) == current, (
        f"docs/{name} differs from what the source says: run `.venv/bin/python tools/gen_docs.py` and commit it"
    )


def test_every_setting_is_documented() -> None:
    from platpay.config import Settings

    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name, field in Settings.model_fields.items():
        assert field.description, f"Settings.{name} has no description (Field(description=...))"
        assert f"`PLATPAY_{name.upper()}`" in text


def _row(trigger: str) -> str:
    """The one row of docs/sandbox.md's table that holds `trigger`."""
    text = (ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8")
    rows = [row for row in re.findall(r"^\| (.+) \|$", text, re.M) if trigger in row]
    assert len(rows) == 1, f"docs/sandbox.md has no single row for {trigger!r}"
    return rows[0]


def test_the_sandbox_table_names_every_magic_value_the_code_reads() -> None:
    from platpay.accounts import sandbox as accounts
    from platpay.accounts.external import service as external_service
    from platpay.cards import sandbox as cards
    from platpay.customers import sandbox as customers
    from platpay.customers.contact import rules as contact
    from platpay.onboarding import sandbox as onboarding
    from platpay.payments import sandbox as payments
    from platpay.payments import sandbox_outcomes
    from platpay.wallets import otp

    def named(trigger: str, values: object) -> None:
        row = _row(trigger)
        missing = [value for value in values if f"`{value}`" not in row]  # type: ignore[attr-defined]
        assert missing == [], f"docs/sandbox.md's row {trigger!r} lacks {missing}"

    named("customer `email` last 3", accounts._PROVISIONING)
    named("external account `platformAccountId`", [*accounts._OWNERSHIP, *accounts._REVIEW])
    named(
        "external account identifier last 3",
        [*external_service._NAME_CHECK, external_service.REJECTED_SUFFIX],
    )
    named("same identifier last 3 | `POST /transfer-out`", sandbox_outcomes.TRANSFER_OUTCOMES)
    named("same identifier last 3 | a quote's payout", payments._PAYOUT_BY_SUFFIX)
    named("individual `fullName`", customers.AT_CREATION)
    named("individual `email` last 3", onboarding.BY_SUFFIX)
    named("business `businessInfo.registrationNumber`", onboarding.BUSINESS_BY_SUFFIX)
    named("beneficial owner `personalInfo.lastName`", onboarding.BY_SUFFIX)
    named("contact verification code", [contact.SANDBOX_CODE])
    named("wallet OTP", [otp.SANDBOX_CODE])
    named("card `platformCardId`", ["001", "002", "005"])
    named("card funding source", ["002", "003"])
    named("`merchant.descriptor`", cards._AUTHORIZATION)
    for domain in payments.SANDBOX_DOMAINS:
        assert domain in (ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8")
    for behaviour in ("success", "pending.long", "fail.compliance"):
        _row(f"`${behaviour}.<ccy>@sandbox.uma.money`")
    _row("`Svc-Sandbox-Fault` request header")
