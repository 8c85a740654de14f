"""How the reference API moved between two of its OpenAPI documents, and what of it platpay does not serve.

    .venv/bin/python tools/reference_drift.py OLD.yaml NEW.yaml [--served URL-or-openapi.json] [--json]

e.g. the document platpay follows (kept in tests/data) against a newer one, and what platpay serves of it:
    .venv/bin/python tools/reference_drift.py tests/data/reference-openapi-2026-08-21.yaml.gz NEW.yaml \
        --served tests/data/openapi.json

Compares the two documents structurally, never by version label (the reference changed its API in 2026
without bumping `info.version`):

- operations by method and path (path parameters by position, so a renamed `{id}` is the same operation):
  added, removed, operationId, security, parameters keyed by location and name (required, type, enum),
  request bodies and responses by media type and status;
- schemas by name, and every schema inside an operation, followed through `$ref`: a `$ref` is compared by
  the name it points at and the schema it names is compared once, under that name (which is also what ends
  a `$ref` cycle). Properties added and removed (`allOf` parts merged, a property reported where it is
  declared, so one moved from a variant to its base is reported once, on the base), required, types,
  nested objects, array items, `oneOf`/`anyOf`/`allOf` variants, discriminators, constraints, and
  enumerations as sets (the `code` enumerations of the `Error<status>` schemas reported as error codes);
- webhooks by name, like operations.

Descriptions, summaries, titles and examples are ignored: a description-only edit reports nothing.

The changes are grouped by platpay domain (DOMAINS; what SPEC.md leaves out is `out-of-scope`). With
`--served` (a running server's `/openapi.json`, or a file such as tests/data/openapi.json) each addition in
scope is checked against what platpay serves: the operation, the parameter, the property in the served
schema of the same name, the enumeration values, a union's variants, a success status. `NOT SERVED` marks
what is missing; `unknown` means platpay serves nothing under that name (it may under another: look).
`--fail-on-missing` exits 1 when anything in scope is not served.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import urllib.request
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

HTTP_METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")
OUT_OF_SCOPE = "out-of-scope"
SHARED = "shared"
WEBHOOKS = "webhooks/events"
# The report's order: SPEC.md's areas as platpay's packages split them.
DOMAINS = (
    "customers",
    "onboarding/verifications",
    "accounts",
    "payments/transactions",
    "quotes",
    "cards",
    "wallets/auth",
    "agents",
    "invitations",
    WEBHOOKS,
    "config/platforms",
    "sandbox",
    "errors",
    SHARED,
    OUT_OF_SCOPE,
)

# An operation's domain by its path, first match. Out of scope (DRIFT-2026-08.md): strong customer
# authentication (/sca/*, quote authorize, beneficiary trust), stablecoin issuance, the VASP directory,
# delegated signing keys.
PATH_DOMAINS: tuple[tuple[str, str], ...] = (
    (r"^/sca(/|$)", OUT_OF_SCOPE),
    (r"^/quotes/[^/]+/authorize", OUT_OF_SCOPE),
    (r"/(un)?trust(/|$)", OUT_OF_SCOPE),
    (r"^/stablecoin", OUT_OF_SCOPE),
    (r"^/vasps(/|$)", OUT_OF_SCOPE),
    (r"^/auth/delegated-keys", OUT_OF_SCOPE),
    (r"^/sandbox/", "sandbox"),
    (r"^/agents(/|$)", "agents"),
    (r"^/(cards|card-transactions|card-embed)(/|$)", "cards"),
    (r"^/invitations(/|$)", "invitations"),
    (r"^/(quotes|receiver|exchange-rates|crypto)(/|$)", "quotes"),
    (r"^/(transfer-in|transfer-out|transactions|uma-providers)(/|$)", "payments/transactions"),
    (r"^/(auth|tokens)(/|$)", "wallets/auth"),
    (r"^/internal-accounts/[^/]+(/export)?$", "wallets/auth"),
    (r"^/(customers|platform)/(internal|external)-accounts", "accounts"),
    (r"^/(internal-accounts|discoveries)(/|$)", "accounts"),
    (r"^/(verifications|beneficial-owners|documents)(/|$)", "onboarding/verifications"),
    (r"^/customers/[^/]+/(kyc-link|verify-email|verify-phone)", "onboarding/verifications"),
    (r"^/customers(/|$)", "customers"),
    (r"^/webhooks(/|$)", WEBHOOKS),
    (r"^/(config|platform)(/|$)", "config/platforms"),
)

# A schema's domain by its name, first match. A schema no rule names belongs to the one domain whose
# operations reach it (through `$ref`), else to `shared`. SMS OTP credentials are out of scope too.
SCHEMA_DOMAINS: tuple[tuple[str, str], ...] = (
    (r"^(Sca|Totp|TwoFactorReset|BeneficiaryTrust|RecordSecurityEvent|PasskeyEnrollment|PasskeyFactorEnroll)", OUT_OF_SCOPE),
    (r"^(Stablecoin|Vasp|DelegatedKey|SmsOtp)|^Error423$", OUT_OF_SCOPE),
    (r"^(Error\d{3}|GridError|FieldError|FieldConstraint)$", "errors"),
    (r"Webhook", WEBHOOKS),
    (r"^Sandbox", "sandbox"),
    (r"^Agent", "agents"),
    (r"^Card", "cards"),
    (r"^Invitation", "invitations"),
    (r"Quote|ExchangeRate|^Receiver|PlatformFeeOverride", "quotes"),
    (r"Transaction|Transfer|Refund|PaymentRail|RailSelection|PurposeOfPayment|Reconciliation|Counterparty", "payments/transactions"),
    (r"^(Auth|Session|Credential|EmailOtp|Oauth|Passkey|ApiToken|Token)", "wallets/auth"),
    (r"ExternalAccount|InternalAccount|AccountInfo|Beneficiary$|Ownership|WalletInfo|Discovery", "accounts"),
    (r"Verification|BeneficialOwner|Document|Kyc|Kyb|Liveness", "onboarding/verifications"),
    (r"Customer|Individual|Business|EndUserTerms|Edd$|SourceOf|NetWorth|AnnualIncome|ExpectedMonthly|PepStatus|EntityType", "customers"),
    (r"^(Platform|Config|Fee|FixedFee)", "config/platforms"),
)  # fmt: skip

# SPEC §0 names two headers differently from the reference: a parameter served under platpay's name counts.
HEADER_ALIASES = {"grid-wallet-signature": "svc-wallet-signature", "x-grid-signature": "x-svc-signature"}
CONSTRAINT_KEYS = (
    "format", "const", "default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "minProperties",
    "maxProperties", "readOnly", "writeOnly", "deprecated",
)  # fmt: skip
# Out-of-scope parts of in-scope schemas: SCA's statuses and codes, SMS OTP, stablecoins; and any schema
# SCHEMA_DOMAINS puts out of scope (a variant, a property's type). A response added for SCA says so.
OUT_OF_SCOPE_VALUES = re.compile(
    r"^(SCA_|SMS_OTP|STABLECOIN|BENEFICIARY_TRUST|PASSKEY_ALREADY_ENROLLED$|ACCOUNT_LOCKED$)|PENDING_AUTHORIZATION$"
)
OUT_OF_SCOPE_TEXT = re.compile(r"Strong Customer Authentication")
SERVED, MISSING, UNKNOWN = "served", "NOT SERVED", "unknown"

Segment = tuple[str, ...]  # ("property", name) | ("items",) | ("values",) | ("variant", key)


@dataclass
class Change:
    domain: str
    kind: str  # "operation added", "property added", "enum values added", "error codes added", ...
    subject: str  # "POST /cards", "Card", "webhook card-transaction"
    location: str  # where inside the subject: "maxSpendPerTransaction", "parameter query status", ""
    detail: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    served: str | None = None  # SERVED, MISSING, UNKNOWN or OUT_OF_SCOPE; None: not checked
    missing: list[str] = field(default_factory=list)  # of `added`, what --served did not find
    out_of_scope: list[str] = field(default_factory=list)  # of `added`, what SPEC.md leaves out
    # Where --served looks: ("schema", name) | ("operation", key, part...) | ("webhook", name), then the
    # path inside that schema; and the new document's type at that place (for "type changed").
    anchor: tuple[str, ...] = field(default=(), repr=False)
    segments: list[Segment] = field(default_factory=list, repr=False)
    new_type: tuple[str, ...] = field(default=(), repr=False)
    refers: set[str] = field(default_factory=set, repr=False)  # schemas an added thing names
    sca_text: bool = field(default=False, repr=False)  # an added response that describes itself as SCA

    def label(self) -> str:
        if not self.location:
            return self.subject
        joiner = "." if self.anchor[:1] == ("schema",) else " "
        return f"{self.subject}{joiner}{self.location}"

    def public(self) -> dict[str, Any]:
        found = asdict(self)
        for private in ("anchor", "segments", "new_type", "refers", "sca_text"):
            found.pop(private)
        return found


# ------------------------------------------------------------------------------------------- documents


def load_document(source: str) -> dict[str, Any]:
    """A document from a file (YAML or JSON, gzip-compressed if it ends `.gz`) or an http(s) URL (a running
    server's /openapi.json)."""
    if re.match(r"^https?://", source):
        with urllib.request.urlopen(source, timeout=30) as response:  # noqa: S310 (http(s) only, above)
            text = response.read().decode("utf-8")
    elif source.endswith(".gz"):  # the copy tests/data keeps
        text = gzip.decompress(Path(source).read_bytes()).decode("utf-8")
    else:
        text = Path(source).read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    document = yaml.load(text, Loader=loader)  # noqa: S506 (a SafeLoader); JSON is YAML
    if not isinstance(document, dict) or "paths" not in document:
        raise SystemExit(f"{source}: not an OpenAPI document (no `paths`)")
    return document


def template(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def type_of(node: Any) -> tuple[str, ...]:
    """A schema's JSON types, OpenAPI 3.0's `nullable` counted as "null"; () for none."""
    if not isinstance(node, dict):
        return ()
    declared = node.get("type")
    types = set(declared if isinstance(declared, list) else [declared] if declared else [])
    if node.get("nullable") is True:
        types.add("null")
    return tuple(sorted(types))


def describe(node: Any) -> str:
    """A short type for the report: `TransactionDirection`, `string`, `integer|null`, `Card[]`."""
    if not isinstance(node, dict):
        return "?"
    if "$ref" in node:
        return ref_name(node["$ref"])
    for union in ("oneOf", "anyOf"):
        if node.get(union):
            return " | ".join(describe(variant) for variant in node[union])
    if node.get("allOf"):
        return " & ".join(describe(part) for part in node["allOf"])
    types = type_of(node)
    if "array" in types:
        return f"{describe(node.get('items', {}))}[]" + ("|null" if "null" in types else "")
    return "|".join(types) or "any"


def render(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


class Document:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.schemas: dict[str, Any] = (data.get("components") or {}).get("schemas") or {}

    def pointer(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            return {}  # another document: not followed
        node: Any = self.data
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node

    def resolve(self, node: Any) -> dict[str, Any]:
        """Follow `$ref` to a node that is not one (a cycle of bare references ends as {})."""
        seen: set[str] = set()
        while isinstance(node, dict) and "$ref" in node:
            if node["$ref"] in seen:
                return {}
            seen.add(node["$ref"])
            node = self.pointer(node["$ref"])
        return node if isinstance(node, dict) else {}

    def operations(self) -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
        """`METHOD /path/{}` (path parameters by position) -> (the path as written, path item, operation)."""
        found = {}
        for path, item in (self.data.get("paths") or {}).items():
            item = self.resolve(item)
            for method in HTTP_METHODS:
                if isinstance(item.get(method), dict):
                    found[f"{method.upper()} {template(path)}"] = (path, item, item[method])
        return found

    def webhooks(self) -> dict[str, dict[str, Any]]:
        found = {}
        for name, item in (self.data.get("webhooks") or {}).items():
            item = self.resolve(item)
            for method in HTTP_METHODS:
                if isinstance(item.get(method), dict):
                    found[name] = item[method]
        return found

    def parameters(self, path: str, item: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
        """`location name` -> parameter, the operation's overriding the path item's. Path parameters are
        named by position (`path {1}`), headers in lowercase."""
        merged: dict[tuple[str, str], Any] = {}
        for raw in [*(item.get("parameters") or []), *(operation.get("parameters") or [])]:
            parameter = self.resolve(raw)
            if "in" in parameter and "name" in parameter:
                merged[(parameter["in"], parameter["name"])] = parameter
        positions = {name: index for index, name in enumerate(re.findall(r"\{([^}]*)\}", path), 1)}
        keyed = {}
        for (where, name), parameter in merged.items():
            if where == "path":
                name = f"{{{positions[name]}}}" if name in positions else name
            elif where == "header":
                name = HEADER_ALIASES.get(name.lower(), name.lower())
            keyed[f"{where} {name}"] = parameter
        return keyed

    def bodies(self, container: Any) -> dict[str, Any]:
        """media type -> schema, of a request body or a response."""
        content = self.resolve(container).get("content") or {}
        return {media: (entry or {}).get("schema") or {} for media, entry in content.items()}

    def flatten(self, node: Any, owner: str) -> tuple[dict[str, tuple[Any, str]], dict[str, str]]:
        """A schema's properties with its `allOf` parts merged: name -> (schema, where it is declared),
        and its required names -> where required. The schema's own inline parts are `owner` ("" for an
        inline schema), a part reached through `$ref` the name it points at; a later part overrides."""
        properties: dict[str, tuple[Any, str]] = {}
        required: dict[str, str] = {}

        def visit(part: Any, origin: str, stack: frozenset[str]) -> None:
            if not isinstance(part, dict):
                return
            if "$ref" in part:
                name = ref_name(part["$ref"])
                if name not in stack:  # else a cycle through allOf
                    visit(self.resolve(part), name, stack | {name})
                return
            for sub in part.get("allOf") or []:
                visit(sub, origin, stack)
            for name, schema in (part.get("properties") or {}).items():
                properties[name] = (schema, origin)
            for name in part.get("required") or []:
                if origin == owner or name not in required:
                    required[name] = origin

        visit(node, owner, frozenset({owner}))
        return properties, required

    def effective_type(self, node: Any) -> tuple[str, ...]:
        """The type a schema declares, or the first its `allOf` parts declare."""
        found = type_of(node)
        for part in (node.get("allOf") or []) if not found and isinstance(node, dict) else []:
            found = type_of(self.resolve(part))
            if found:
                break
        return found

    def union(self, node: Any) -> dict[str, Any]:
        """A union's variants (`oneOf`, `anyOf`) keyed by what names them: the schema a `$ref` names, a
        title, the one value of a discriminating property, `null`, else the position."""
        keyed: dict[str, Any] = {}
        for union in ("oneOf", "anyOf"):
            for position, variant in enumerate(node.get(union) or []):
                if not isinstance(variant, dict):
                    continue
                key = ref_name(variant["$ref"]) if "$ref" in variant else variant.get("title")
                for prop in (variant.get("properties") or {}).values() if key is None else ():
                    values = prop.get("enum") if isinstance(prop, dict) else None
                    if isinstance(values, list) and len(values) == 1:
                        key = render(values[0])
                        break
                if key is None and type_of(variant) == ("null",):
                    key = "null"
                keyed[key if key is not None else f"{union}#{position}"] = variant
        return keyed

    def references(self, node: Any) -> set[str]:
        """The schema names a node refers to directly, anywhere inside it."""
        found: set[str] = set()
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, dict):
                ref = current.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                    found.add(ref_name(ref))
                elif isinstance(ref, str):
                    stack.append(self.pointer(ref))
                stack.extend(value for key, value in current.items() if key != "$ref")
            elif isinstance(current, list):
                stack.extend(current)
        return found

    def reach(self, node: Any) -> set[str]:
        """Every schema a node reaches through `$ref`, transitively (cycles end)."""
        reached: set[str] = set()
        pending = list(self.references(node))
        while pending:
            name = pending.pop()
            if name not in reached and name in self.schemas:
                reached.add(name)
                pending.extend(self.references(self.schemas[name]) - reached)
        return reached


def path_domain(path: str) -> str:
    return next((domain for pattern, domain in PATH_DOMAINS if re.search(pattern, path)), SHARED)


def schema_domains(documents: list[Document]) -> dict[str, str]:
    """Every schema's domain: by name (SCHEMA_DOMAINS), else the one domain whose operations (or webhooks)
    reach it; only out-of-scope ones make it out of scope, several make it shared."""
    users: dict[str, set[str]] = defaultdict(set)
    for document in documents:
        for _key, (path, _item, operation) in document.operations().items():
            for name in document.reach(operation):
                users[name].add(path_domain(path))
        for hook in document.webhooks().values():
            for name in document.reach(hook):
                users[name].add(WEBHOOKS)
    domains = {}
    for name in set().union(*(document.schemas for document in documents)):
        named = next((domain for pattern, domain in SCHEMA_DOMAINS if re.search(pattern, name)), None)
        if named is None:
            in_scope = users[name] - {OUT_OF_SCOPE}
            if len(in_scope) == 1:
                named = next(iter(in_scope))
            elif not in_scope and users[name]:
                named = OUT_OF_SCOPE
            else:
                named = SHARED
        domains[name] = named
    return domains


# ----------------------------------------------------------------------------------------------- the diff


class Differ:
    def __init__(self, old: Document, new: Document) -> None:
        self.old = old
        self.new = new
        self.changes: list[Change] = []

    def emit(
        self, kind: str, subject: str, location: str, detail: str, anchor: tuple[str, ...], **extra: Any
    ) -> None:
        self.changes.append(Change("", kind, subject, location, detail, anchor=anchor, **extra))

    # Schemas -------------------------------------------------------------------------------------------

    def schema(
        self,
        old: Any,
        new: Any,
        *,
        subject: str,
        where: str,
        anchor: tuple[str, ...],
        path: list[Segment],
        owner: str,
    ) -> None:
        """Two schema nodes. A `$ref` is compared by the name it points at, never followed here."""
        old = old if isinstance(old, dict) else {}
        new = new if isinstance(new, dict) else {}
        at = {"subject": subject, "where": where, "anchor": anchor, "path": path}
        if "$ref" in old or "$ref" in new:
            if describe(old) != describe(new) or ("$ref" in old) != ("$ref" in new):
                self.type_changed(old, new, **at)
            return
        if self.old.effective_type(old) != self.new.effective_type(new):
            self.type_changed(old, new, **at)
        self.enumeration(old, new, **at)
        for key in CONSTRAINT_KEYS:
            if old.get(key) != new.get(key):
                detail = f"{key}: {render(old.get(key, '—'))} → {render(new.get(key, '—'))}"
                self.emit("constraint changed", subject, where, detail, anchor, segments=path)
        self.properties(old, new, owner=owner, **at)
        if "items" in old or "items" in new:
            self.schema(
                old.get("items"), new.get("items"), subject=subject, where=f"{where}[]", anchor=anchor,
                path=[*path, ("items",)], owner="",
            )  # fmt: skip
        old_values, new_values = old.get("additionalProperties"), new.get("additionalProperties")
        if isinstance(old_values, dict) and isinstance(new_values, dict):
            self.schema(
                old_values, new_values, subject=subject, where=f"{where}{{}}", anchor=anchor,
                path=[*path, ("values",)], owner="",
            )  # fmt: skip
        elif old_values != new_values:
            shown = [
                describe(v) if isinstance(v, dict) else render(v if v is not None else "—")
                for v in (old_values, new_values)
            ]
            self.emit(
                "constraint changed",
                subject,
                where,
                f"additionalProperties: {shown[0]} → {shown[1]}",
                anchor,
                segments=path,
            )
        self.variants(old, new, **at)
        self.discriminator(old.get("discriminator") or {}, new.get("discriminator") or {}, **at)

    def type_changed(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        subject: str,
        where: str,
        anchor: tuple[str, ...],
        path: list[Segment],
    ) -> None:
        self.emit(
            "type changed", subject, where, f"{describe(old)} → {describe(new)}", anchor,
            segments=path, new_type=type_of(self.new.resolve(new)),
        )  # fmt: skip

    def enumeration(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        subject: str,
        where: str,
        anchor: tuple[str, ...],
        path: list[Segment],
    ) -> None:
        if "enum" not in old and "enum" not in new:
            return
        before = {render(value) for value in old.get("enum") or []}
        after = {render(value) for value in new.get("enum") or []}
        if ("enum" in old) != ("enum" in new):
            detail = "now an enumeration" if "enum" in new else "no longer an enumeration"
            self.emit(
                "constraint changed",
                subject,
                where,
                detail,
                anchor,
                segments=path,
                added=sorted(after),
                removed=sorted(before),
            )
            return
        noun = "error codes" if re.fullmatch(r"Error\d{3}", subject) and where == "code" else "enum values"
        if after - before:
            self.emit(
                f"{noun} added", subject, where, "", anchor, segments=path, added=sorted(after - before)
            )
        if before - after:
            self.emit(
                f"{noun} removed", subject, where, "", anchor, segments=path, removed=sorted(before - after)
            )

    def properties(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        subject: str,
        where: str,
        anchor: tuple[str, ...],
        path: list[Segment],
        owner: str,
    ) -> None:
        """Properties and required names, `allOf` merged, each reported where it is declared."""
        old_props, old_required = self.old.flatten(old, owner)
        new_props, new_required = self.new.flatten(new, owner)
        prefix = f"{where}." if where else ""
        for name in sorted(set(old_props) | set(new_props)):
            inside = [*path, ("property", name)]
            before, after = old_props.get(name), new_props.get(name)
            if before is None and after is not None and after[1] == owner:
                required = " (required)" if name in new_required else ""
                self.emit(
                    "property added", subject, prefix + name, describe(after[0]) + required, anchor,
                    segments=inside, refers=self.new.references(after[0]),
                )  # fmt: skip
            elif after is None and before is not None and before[1] == owner:
                self.emit(
                    "property removed", subject, prefix + name, describe(before[0]), anchor, segments=inside
                )
            elif before is not None and after is not None and owner in (before[1], after[1]):
                self.schema(
                    before[0],
                    after[0],
                    subject=subject,
                    where=prefix + name,
                    anchor=anchor,
                    path=inside,
                    owner="",
                )
        for name in sorted(set(old_required) | set(new_required)):
            was, now = name in old_required, name in new_required
            declared_here = owner in (old_required.get(name), new_required.get(name))
            if was != now and declared_here and name in old_props and name in new_props:
                kind, detail = (
                    ("required added", "now required") if now else ("required removed", "now optional")
                )
                self.emit(kind, subject, prefix + name, detail, anchor, segments=[*path, ("property", name)])

    def variants(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        subject: str,
        where: str,
        anchor: tuple[str, ...],
        path: list[Segment],
    ) -> None:
        before, after = self.old.union(old), self.new.union(new)
        union = "oneOf" if old.get("oneOf") or new.get("oneOf") else "anyOf"
        for key in sorted(set(after) - set(before)):
            shape = describe(after[key])
            detail = union if shape == key else f"{union} ({shape})"
            self.emit(
                "variant added", subject, where, detail, anchor, segments=path, added=[key], refers={key}
            )
        for key in sorted(set(before) - set(after)):
            shape = describe(before[key])
            detail = union if shape == key else f"{union} ({shape})"
            self.emit("variant removed", subject, where, detail, anchor, segments=path, removed=[key])
        for key in sorted(set(before) & set(after)):
            self.schema(
                before[key], after[key], subject=subject, where=f"{where}<{key}>", anchor=anchor,
                path=[*path, ("variant", key)], owner="",
            )  # fmt: skip
        old_bases = {ref_name(part["$ref"]) for part in old.get("allOf") or [] if "$ref" in part}
        new_bases = {ref_name(part["$ref"]) for part in new.get("allOf") or [] if "$ref" in part}
        for name in sorted(new_bases - old_bases):
            self.emit(
                "variant added", subject, where, "allOf", anchor, segments=path, added=[name], refers={name}
            )
        for name in sorted(old_bases - new_bases):
            self.emit("variant removed", subject, where, "allOf", anchor, segments=path, removed=[name])

    def discriminator(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        subject: str,
        where: str,
        anchor: tuple[str, ...],
        path: list[Segment],
    ) -> None:
        if old.get("propertyName") != new.get("propertyName"):
            detail = f"propertyName: {old.get('propertyName', '—')} → {new.get('propertyName', '—')}"
            self.emit("discriminator changed", subject, where, detail, anchor, segments=path)
        before, after = old.get("mapping") or {}, new.get("mapping") or {}
        if before != after:
            moved = [
                f"{value}: {ref_name(before[value])} → {ref_name(after[value])}"
                for value in sorted(after)
                if value in before and before[value] != after[value]
            ]
            self.emit(
                "discriminator changed", subject, where, "mapping" + "".join(f"; {m}" for m in moved), anchor,
                segments=path, added=sorted(set(after) - set(before)), removed=sorted(set(before) - set(after)),
            )  # fmt: skip

    # Operations and webhooks ------------------------------------------------------------------------

    def operation(self, key: str, subject: str, old: tuple[Any, ...], new: tuple[Any, ...]) -> None:
        (old_path, old_item, old_op), (new_path, new_item, new_op) = old, new
        anchor = ("operation", key)
        if old_op.get("operationId") != new_op.get("operationId"):
            self.emit(
                "operationId changed",
                subject,
                "",
                f"{old_op.get('operationId')} → {new_op.get('operationId')}",
                anchor,
            )
        old_security, new_security = self.security(self.old, old_op), self.security(self.new, new_op)
        if old_security != new_security:
            self.emit("security changed", subject, "", f"{old_security} → {new_security}", anchor)
        old_params = self.old.parameters(old_path, old_item, old_op)
        new_params = self.new.parameters(new_path, new_item, new_op)
        for name in sorted(set(old_params) | set(new_params)):
            before, after = old_params.get(name), new_params.get(name)
            where = f"parameter {name.split(' ')[0]} {(after or before)['name']}"
            at = ("operation", key, "parameter", name)
            if before is None:
                required = " (required)" if after.get("required") else ""
                self.emit("parameter added", subject, where, describe(after.get("schema")) + required, at)
            elif after is None:
                self.emit("parameter removed", subject, where, describe(before.get("schema")), at)
            else:
                if bool(before.get("required")) != bool(after.get("required")):
                    now = bool(after.get("required"))
                    self.emit(
                        "required added" if now else "required removed",
                        subject,
                        where,
                        "now required" if now else "now optional",
                        at,
                    )
                self.schema(
                    before.get("schema"),
                    after.get("schema"),
                    subject=subject,
                    where=where,
                    anchor=at,
                    path=[],
                    owner="",
                )
        self.body(old_op.get("requestBody"), new_op.get("requestBody"), subject=subject, anchor=anchor)
        old_responses = {str(status): value for status, value in (old_op.get("responses") or {}).items()}
        new_responses = {str(status): value for status, value in (new_op.get("responses") or {}).items()}
        for status in sorted(set(old_responses) | set(new_responses)):
            where, at = f"response {status}", (*anchor, "response", status)
            if status not in old_responses:
                response = self.new.resolve(new_responses[status])
                self.emit(
                    "response added", subject, where, self.shapes(self.new, response), at, added=[status],
                    sca_text=bool(OUT_OF_SCOPE_TEXT.search(response.get("description") or "")),
                )  # fmt: skip
            elif status not in new_responses:
                self.emit("response removed", subject, where, "", at, removed=[status])
            else:
                self.media(
                    self.old.bodies(old_responses[status]),
                    self.new.bodies(new_responses[status]),
                    subject=subject,
                    where=where,
                    anchor=at,
                )

    def body(self, old: Any, new: Any, *, subject: str, anchor: tuple[str, ...]) -> None:
        at = (*anchor, "request")
        if old is None or new is None:
            if old is not None or new is not None:
                kind = "request body added" if new is not None else "request body removed"
                self.emit(
                    kind, subject, "request body", self.shapes(self.new, new) if new is not None else "", at
                )
            return
        old_body, new_body = self.old.resolve(old), self.new.resolve(new)
        if bool(old_body.get("required")) != bool(new_body.get("required")):
            now = bool(new_body.get("required"))
            self.emit(
                "required added" if now else "required removed",
                subject,
                "request body",
                "now required" if now else "now optional",
                at,
            )
        self.media(
            self.old.bodies(old_body),
            self.new.bodies(new_body),
            subject=subject,
            where="request body",
            anchor=at,
        )

    def media(
        self, old: dict[str, Any], new: dict[str, Any], *, subject: str, where: str, anchor: tuple[str, ...]
    ) -> None:
        for media in sorted(set(old) | set(new)):
            label, at = f"{where} {media}", (*anchor, media)
            if media not in old:
                self.emit("media type added", subject, label, describe(new[media]), at)
            elif media not in new:
                self.emit("media type removed", subject, label, describe(old[media]), at)
            else:
                self.schema(
                    old[media], new[media], subject=subject, where=label, anchor=at, path=[], owner=""
                )

    @staticmethod
    def shapes(document: Document, container: Any) -> str:
        return ", ".join(
            f"{media} {describe(schema)}" for media, schema in document.bodies(container).items()
        )

    @staticmethod
    def security(document: Document, operation: dict[str, Any]) -> str:
        requirements = operation.get("security", document.data.get("security") or [])
        return " | ".join(sorted("+".join(sorted(option)) or "none" for option in requirements)) or "none"

    def run(self) -> list[Change]:
        old_ops, new_ops = self.old.operations(), self.new.operations()
        for key in sorted(set(old_ops) | set(new_ops)):
            method = key.split(" ", 1)[0]
            subject = f"{method} {(new_ops.get(key) or old_ops[key])[0]}"
            if key not in old_ops:
                self.emit(
                    "operation added",
                    subject,
                    "",
                    new_ops[key][2].get("operationId") or "",
                    ("operation", key),
                )
            elif key not in new_ops:
                self.emit(
                    "operation removed",
                    subject,
                    "",
                    old_ops[key][2].get("operationId") or "",
                    ("operation", key),
                )
            else:
                self.operation(key, subject, old_ops[key], new_ops[key])
        old_hooks, new_hooks = self.old.webhooks(), self.new.webhooks()
        for name in sorted(set(old_hooks) | set(new_hooks)):
            subject, anchor = f"webhook {name}", ("webhook", name)
            if name not in old_hooks:
                self.emit(
                    "webhook added",
                    subject,
                    "",
                    self.shapes(self.new, new_hooks[name].get("requestBody")),
                    anchor,
                )
            elif name not in new_hooks:
                self.emit("webhook removed", subject, "", "", anchor)
            else:
                self.body(
                    old_hooks[name].get("requestBody"),
                    new_hooks[name].get("requestBody"),
                    subject=subject,
                    anchor=anchor,
                )
        for name in sorted(set(self.old.schemas) | set(self.new.schemas)):
            anchor = ("schema", name)
            if name not in self.old.schemas:
                self.emit("schema added", name, "", describe(self.new.schemas[name]), anchor)
            elif name not in self.new.schemas:
                self.emit("schema removed", name, "", describe(self.old.schemas[name]), anchor)
            else:
                self.schema(
                    self.old.schemas[name],
                    self.new.schemas[name],
                    subject=name,
                    where="",
                    anchor=anchor,
                    path=[],
                    owner=name,
                )
        return self.changes


# ------------------------------------------------------------------------------------ what platpay serves


class Served:
    """platpay's served document, its paths without the base path it serves them under (`/2025-10-13`)."""

    def __init__(self, document: Document, reference: Document) -> None:
        self.document = document
        operations = document.operations()
        wanted = set(reference.operations())
        prefixes = {""} | {"/" + key.split(" ", 1)[1].split("/")[1] for key in operations}

        def strip(key: str, prefix: str) -> str:
            method, path = key.split(" ", 1)
            return f"{method} {path[len(prefix) :]}" if prefix and path.startswith(prefix + "/") else key

        self.prefix = max(
            sorted(prefixes), key=lambda prefix: len({strip(key, prefix) for key in operations} & wanted)
        )
        self.operations = {strip(key, self.prefix): value for key, value in operations.items()}

    def check(self, change: Change) -> tuple[str | None, list[str]]:
        """(SERVED | MISSING | UNKNOWN | None when the kind is not checked, the added values missing)."""
        kind, anchor = change.kind, change.anchor
        if kind == "operation added":
            return (SERVED if anchor[1] in self.operations else MISSING), []
        if anchor[0] == "webhook":
            if kind == "webhook added" and self.document.data.get("webhooks") is not None:
                return (SERVED if anchor[1] in self.document.webhooks() else MISSING), []
            return (UNKNOWN if kind == "webhook added" else None), []
        if kind == "response added" and not change.added[0].startswith("2"):
            return None, []  # an error status platpay may answer without documenting it
        if kind not in ("parameter added", "response added", "schema added", "property added", "type changed",
                        "enum values added", "error codes added", "variant added"):  # fmt: skip
            return None, []
        if anchor[0] == "schema":
            if anchor[1] not in self.document.schemas:
                return UNKNOWN, []
            if kind == "schema added":
                return SERVED, []
            node: Any = self.document.schemas[anchor[1]]
        else:
            operation = self.operations.get(anchor[1])
            if operation is None:
                return MISSING, []  # the operation itself is not served
            path, item, served_op = operation
            part = anchor[2:]
            if part[0] == "parameter":
                parameter = self.document.parameters(path, item, served_op).get(part[1])
                if parameter is None:
                    return MISSING, []
                node = parameter.get("schema") or {}
            elif part[0] == "request":
                bodies = self.document.bodies(served_op.get("requestBody"))
                node = bodies.get(part[1]) if len(part) > 1 else None
                if node is None:
                    return UNKNOWN, []
            else:  # response
                responses = {
                    str(status): value for status, value in (served_op.get("responses") or {}).items()
                }
                if part[1] not in responses:
                    return MISSING, []
                if kind == "response added":
                    return SERVED, []
                node = self.document.bodies(responses[part[1]]).get(part[2]) if len(part) > 2 else None
                if node is None:
                    return UNKNOWN, []
        if kind == "parameter added":
            return SERVED, []
        for segment in change.segments:
            node = self.step(node, segment)
            if node is None:
                return (MISSING if segment[0] == "property" else UNKNOWN), []
        return self.judge(change, self.document.resolve(node))

    def step(self, node: Any, segment: Segment) -> Any:
        node = self.document.resolve(node)
        if segment[0] == "property":
            return self.properties(node).get(segment[1])
        if segment[0] == "items":
            return node.get("items")
        if segment[0] == "values":
            values = node.get("additionalProperties")
            return values if isinstance(values, dict) else None
        return self.document.union(node).get(segment[1])

    def properties(self, node: Any) -> dict[str, Any]:
        """What a served node has: its properties with `allOf` merged, or for a union its variants'."""
        found = {name: schema for name, (schema, _) in self.document.flatten(node, "")[0].items()}
        for variant in self.document.union(self.document.resolve(node)).values():
            for name, (schema, _) in self.document.flatten(variant, "")[0].items():
                found.setdefault(name, schema)
        return found

    def judge(self, change: Change, node: dict[str, Any]) -> tuple[str, list[str]]:
        kind = change.kind
        if kind == "property added":
            return SERVED, []
        if kind in ("enum values added", "error codes added"):
            values = self.enumeration(node)
            if values is None:
                return SERVED, []  # served as an open value: anything goes
            missing = [value for value in change.added if value not in values]
            return (MISSING if missing else SERVED), missing
        if kind == "variant added":
            names = set(self.document.union(node)) | {
                ref_name(part["$ref"]) for part in node.get("allOf") or [] if "$ref" in part
            }
            missing = [value for value in change.added if value not in names]
            return (MISSING if missing else SERVED), missing
        if kind == "type changed":
            if not change.new_type:
                return UNKNOWN, []
            return (SERVED if type_of(node) == change.new_type else MISSING), []
        return SERVED, []

    def enumeration(self, node: dict[str, Any]) -> set[str] | None:
        if "enum" in node:
            return {render(value) for value in node["enum"]}
        if "const" in node:
            return {render(node["const"])}
        values: set[str] = set()
        for variant in self.document.union(node).values():
            found = self.enumeration(self.document.resolve(variant))
            if found:
                values |= found
        return values or None


# ---------------------------------------------------------------------------------------------- the report


@dataclass
class Drift:
    old: dict[str, Any]
    new: dict[str, Any]
    counts: dict[str, Any]
    changes: list[Change]
    served: str | None = None

    def by_domain(self) -> dict[str, list[Change]]:
        grouped: dict[str, list[Change]] = {domain: [] for domain in DOMAINS}
        for change in self.changes:
            grouped.setdefault(change.domain, []).append(change)
        return {domain: changes for domain, changes in grouped.items() if changes}

    def not_served(self) -> list[Change]:
        return [change for change in self.changes if change.served == MISSING]

    def as_json(self) -> dict[str, Any]:
        return {
            "old": self.old,
            "new": self.new,
            "counts": self.counts,
            "served": self.served,
            "domains": {
                domain: [c.public() for c in changes] for domain, changes in self.by_domain().items()
            },
            "notServed": [change.public() for change in self.not_served()],
        }

    def text(self) -> str:
        ops, schemas, hooks = self.counts["operations"], self.counts["schemas"], self.counts["webhooks"]
        lines = [
            f"Reference drift: {self.old['source']} → {self.new['source']}",
            f"  info.version {self.old['version']} → {self.new['version']}"
            + (
                "  (unchanged: only a structural diff sees this drift)"
                if self.old["version"] == self.new["version"]
                else ""
            ),
            f"Operations: {ops['old']} → {ops['new']} ({ops['added']} added, {ops['removed']} removed, {ops['changed']} changed)",
            f"Schemas: {schemas['old']} → {schemas['new']} ({schemas['added']} added, {schemas['removed']} removed, {schemas['changed']} changed)",
            f"Webhooks: {hooks['old']} → {hooks['new']} ({hooks['added']} added, {hooks['removed']} removed, {hooks['changed']} changed)",
            f"Changes: {len(self.changes)}",
        ]
        if self.served:
            lines.append(
                f"Served ({self.served}): {len(self.not_served())} in-scope changes not served yet; "
                f"{sum(c.served == UNKNOWN for c in self.changes)} unknown (nothing served under that name)"
            )
        for domain, changes in self.by_domain().items():
            missing = sum(change.served == MISSING for change in changes)
            lines += [
                "",
                f"## {domain}: {len(changes)} change{'s' * (len(changes) != 1)}"
                + (f", {missing} not served" if missing else ""),
            ]
            for change in changes:
                lines.append("  " + line_of(change))
        if self.served:
            lines += ["", f"## Not served yet ({len(self.not_served())})"]
            lines += [f"  [{change.domain}] {line_of(change, served=False)}" for change in self.not_served()]
        return "\n".join(lines) + "\n"


def line_of(change: Change, *, served: bool = True) -> str:
    values = "".join(
        [
            f" +{', +'.join(change.added)}" if change.added else "",
            f" -{', -'.join(change.removed)}" if change.removed else "",
        ]
    )
    text = f"{change.kind:<22} {change.label()}"
    if change.detail:
        text += f": {change.detail}"
    text += values
    if served and change.served in (MISSING, UNKNOWN):
        text += f"   [{change.served}" + (f": {', '.join(change.missing)}" if change.missing else "") + "]"
    if served and change.domain != OUT_OF_SCOPE and (change.served == OUT_OF_SCOPE or change.out_of_scope):
        text += f"   [out of scope{': ' + ', '.join(change.out_of_scope) if change.out_of_scope and change.served != OUT_OF_SCOPE else ''}]"
    elif not served and change.missing:
        text += f"   (missing: {', '.join(change.missing)})"
    return text


def compare(
    old: dict[str, Any], new: dict[str, Any], *, served: dict[str, Any] | None = None,
    sources: tuple[str, str, str | None] = ("old", "new", None),
) -> Drift:  # fmt: skip
    """The drift from `old` to `new` (parsed documents), checked against `served` when given."""
    old_doc, new_doc = Document(old), Document(new)
    changes = Differ(old_doc, new_doc).run()
    domains = schema_domains([new_doc, old_doc])
    for change in changes:
        if change.anchor[0] == "schema":
            change.domain = domains.get(change.subject, SHARED)
        elif change.anchor[0] == "webhook":
            change.domain = WEBHOOKS
        else:
            change.domain = path_domain(change.subject.split(" ", 1)[1])
    checker = Served(Document(served), new_doc) if served is not None else None
    for change in changes:
        change.out_of_scope = [
            value
            for value in change.added
            if OUT_OF_SCOPE_VALUES.search(value) or domains.get(value) == OUT_OF_SCOPE
        ]
        wholly_out = (
            change.domain == OUT_OF_SCOPE
            or change.sca_text
            or any(domains.get(name) == OUT_OF_SCOPE for name in change.refers)
            or (change.added and len(change.out_of_scope) == len(change.added))
        )
        if wholly_out:
            change.served = OUT_OF_SCOPE if checker else None
        elif checker is not None:
            change.served, missing = checker.check(change)
            change.missing = [value for value in missing if value not in change.out_of_scope]
            if missing and not change.missing:
                change.served = SERVED  # only out-of-scope values are missing
    order = {domain: index for index, domain in enumerate(DOMAINS)}
    changes.sort(
        key=lambda c: (
            order.get(c.domain, len(order)),
            c.anchor[0] == "schema",
            c.subject,
            c.location,
            c.kind,
        )
    )

    def counted(kind: str, old_names: set[str], new_names: set[str]) -> dict[str, int]:
        changed = {
            c.subject for c in changes
            if c.anchor[0] == kind and c.kind not in (f"{kind} added", f"{kind} removed")
        }  # fmt: skip
        return {
            "old": len(old_names), "new": len(new_names), "added": len(new_names - old_names),
            "removed": len(old_names - new_names), "changed": len(changed),
        }  # fmt: skip

    counts = {
        "operations": counted("operation", set(old_doc.operations()), set(new_doc.operations())),
        "schemas": counted("schema", set(old_doc.schemas), set(new_doc.schemas)),
        "webhooks": counted("webhook", set(old_doc.webhooks()), set(new_doc.webhooks())),
        "byKind": dict(sorted(Counter(change.kind for change in changes).items())),
        "byDomain": {domain: len(found) for domain, found in _group(changes).items()},
    }
    version = lambda document: (document.get("info") or {}).get("version")  # noqa: E731
    return Drift(
        old={"source": sources[0], "version": version(old)},
        new={"source": sources[1], "version": version(new)},
        counts=counts,
        changes=changes,
        served=(sources[2] or "the served document") if served is not None else None,
    )


def _group(changes: list[Change]) -> dict[str, list[Change]]:
    grouped: dict[str, list[Change]] = defaultdict(list)
    for change in changes:
        grouped[change.domain].append(change)
    return dict(grouped)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("old", help="the earlier reference document (YAML or JSON)")
    parser.add_argument("new", help="the later reference document")
    parser.add_argument("--served", help="platpay's document: a running server's /openapi.json URL or a file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--fail-on-missing", action="store_true", help="exit 1 when an in-scope change is not served"
    )
    args = parser.parse_args(argv)
    drift = compare(
        load_document(args.old), load_document(args.new),
        served=load_document(args.served) if args.served else None,
        sources=(args.old, args.new, args.served),
    )  # fmt: skip
    if args.json:
        json.dump(drift.as_json(), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(drift.text())
    return 1 if args.fail_on_missing and drift.not_served() else 0


if __name__ == "__main__":
    sys.exit(main())
