"""Documents: uploads typed by content (PDF, JPEG, PNG; a renamed executable refused), the 10 MiB limit
enforced while streaming (413, nothing stored), download of what was uploaded (hash recorded), list by
holder, replace, delete (409 while under review), bad input, tenant isolation."""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx
import pytest

from platpay import BASE_PATH
from platpay.app import create_app
from tests.factories import create_platform
from tests.support.onboarding import (
    BUSINESS,
    EXECUTABLE,
    JPEG,
    PDF,
    PERSON,
    create,
    owner,
    png,
    upload,
    uploaded,
    verify,
)


def _stored_files(settings) -> list[Path]:
    root = Path(settings.var_dir) / "documents"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


class TestUpload:
    @pytest.mark.parametrize(
        ("content", "kind"), [(PDF, "application/pdf"), (JPEG, "image/jpeg"), (png(), "image/png")]
    )
    async def test_each_type_round_trips(self, client, auth, settings, content, kind):
        person = await create(client, auth, PERSON)
        response = await upload(
            client,
            auth,
            person["id"],
            "NATIONAL_ID",
            content,
            name="id card.bin",
            side="FRONT",
            documentNumber="X1",
        )
        assert response.status_code == 201, response.text
        document = response.json()
        assert document["documentHolder"] == person["id"] and document["documentType"] == "NATIONAL_ID"
        assert (
            document["fileName"] == "id card.bin"
            and document["side"] == "FRONT"
            and document["documentNumber"] == "X1"
        )
        assert (await client.get(f"/documents/{document['id']}", auth=auth)).json() == document
        download = await client.get(f"/documents/{document['id']}/content", auth=auth)
        assert download.status_code == 200 and download.content == content
        assert download.headers["content-type"].startswith(kind)
        assert download.headers["x-content-sha256"] == hashlib.sha256(content).hexdigest()
        assert len(_stored_files(settings)) == 1  # only the committed file, no leftovers

    async def test_the_content_decides_not_the_name(self, client, auth, settings):
        person = await create(client, auth, PERSON)
        response = await upload(client, auth, person["id"], content=EXECUTABLE, name="passport.pdf")
        assert response.status_code == 400 and response.json()["details"]["fields"][0]["field"] == "file"
        tiny = await upload(client, auth, person["id"], content=b"%PD", name="x.pdf")
        assert tiny.status_code == 400
        listed = (await client.get("/documents", auth=auth, params={"documentHolder": person["id"]})).json()
        assert listed["data"] == [] and _stored_files(settings) == []

    async def test_over_the_limit_is_cut_off_while_streaming(self, client, auth, settings):
        person = await create(client, auth, PERSON)
        limit = settings.document_max_bytes
        response = await upload(client, auth, person["id"], content=PDF + b"\0" * (limit + 1 - len(PDF)))
        assert response.status_code == 413, response.text
        assert response.json()["code"] == "PAYLOAD_TOO_LARGE"
        exactly = await upload(client, auth, person["id"], content=PDF + b"\0" * (limit - len(PDF)))
        assert exactly.status_code == 201, exactly.text
        assert len(_stored_files(settings)) == 1

    async def test_a_small_limit_applies_to_the_body_at_the_edge_too(self, settings, db, auth):
        app = create_app(
            settings.model_copy(update={"document_max_bytes": 64 * 1024}), database=db, embedded_worker=False
        )
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://testserver{BASE_PATH}") as client:
            person = await create(client, auth, PERSON)
            big = await upload(client, auth, person["id"], content=PDF + b"\0" * (3 << 20))
            assert big.status_code == 413
            assert _stored_files(settings) == []

    @pytest.mark.parametrize(
        ("fields", "named"),
        [
            ({"documentType": "SELFIE_VIDEO"}, "documentType"),
            ({"country": "USA"}, "country"),
            ({"side": "MIDDLE"}, "side"),
            ({"documentNumber": "x" * 101}, "documentNumber"),
            ({"color": "red"}, "color"),
        ],
    )
    async def test_metadata_is_checked_and_nothing_is_kept(self, client, auth, settings, fields, named):
        person = await create(client, auth, PERSON)
        response = await upload(client, auth, person["id"], **fields)
        assert response.status_code == 400 and named in response.text, response.text
        assert _stored_files(settings) == []

    async def test_required_parts_and_media_type(self, client, auth):
        person = await create(client, auth, PERSON)
        no_file = await client.post(
            "/documents",
            auth=auth,
            data={"documentHolder": person["id"], "documentType": "PASSPORT", "country": "US"},
            files={"other": ("a", b"b")},
        )
        assert no_file.status_code == 400
        bare = await client.post(
            "/documents",
            auth=auth,
            data={"documentType": "PASSPORT"},
            files={"file": ("a.pdf", PDF, "application/pdf")},
        )
        assert bare.status_code == 400
        assert {f["field"] for f in bare.json()["details"]["fields"]} == {"documentHolder", "country"}
        json_body = await client.post("/documents", auth=auth, json={"documentHolder": person["id"]})
        assert json_body.status_code == 415

    async def test_holders_are_customers_or_owners_of_the_tenant(self, client, auth, db, settings):
        business = await create(client, auth, BUSINESS)
        person = await owner(client, auth, business["id"])
        assert (await upload(client, auth, person["id"], content=png())).status_code == 201
        assert (await upload(client, auth, "BeneficialOwner:nope")).status_code == 404
        assert (await upload(client, auth, "Quote:x")).status_code == 404
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        assert (await upload(client, other, business["id"])).status_code == 404
        assert (await upload(client, other, person["id"])).status_code == 404


class TestManage:
    async def test_list_replace_delete(self, client, auth, settings):
        person = await create(client, auth, PERSON)
        first = await uploaded(client, auth, person["id"], "PASSPORT")
        second = await uploaded(client, auth, person["id"], "UTILITY_BILL", JPEG)
        listed = (await client.get("/documents", auth=auth, params={"documentHolder": person["id"]})).json()
        assert [d["id"] for d in listed["data"]] == [second["id"], first["id"]] and listed["totalCount"] == 2
        replaced = await client.put(
            f"/documents/{first['id']}",
            auth=auth,
            data={"documentType": "DRIVERS_LICENSE", "country": "CA"},
            files={"file": ("new.png", png(), "image/png")},
        )
        assert replaced.status_code == 200, replaced.text
        body = replaced.json()
        assert (
            body["documentType"] == "DRIVERS_LICENSE"
            and body["country"] == "CA"
            and body["fileName"] == "new.png"
        )
        assert (await client.get(f"/documents/{first['id']}/content", auth=auth)).content == png()
        assert len(_stored_files(settings)) == 2  # the replaced file is gone
        boundary = "platpay-test"
        only_meta = await client.put(
            f"/documents/{first['id']}",
            auth=auth,
            content=f'--{boundary}\r\nContent-Disposition: form-data; name="documentNumber"\r\n\r\nZ9\r\n--{boundary}--\r\n',
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        assert only_meta.status_code == 200, only_meta.text
        assert only_meta.json()["documentNumber"] == "Z9" and only_meta.json()["fileName"] == "new.png"
        deleted = await client.delete(f"/documents/{second['id']}", auth=auth)
        assert deleted.status_code == 204
        assert (await client.get(f"/documents/{second['id']}", auth=auth)).status_code == 404
        assert (await client.delete(f"/documents/{second['id']}", auth=auth)).status_code == 404
        assert len(_stored_files(settings)) == 1

    async def test_under_review_they_cannot_change(self, client, auth, runner):
        person = await create(client, auth, PERSON)
        passport = await uploaded(client, auth, person["id"], "PASSPORT")
        await uploaded(client, auth, person["id"], "BANK_STATEMENT")
        assert (await verify(client, auth, person["id"]))["verificationStatus"] == "IN_PROGRESS"
        refused = await client.delete(f"/documents/{passport['id']}", auth=auth)
        assert refused.status_code == 409 and refused.json()["code"] == "CONFLICT"
        refused = await client.put(
            f"/documents/{passport['id']}",
            auth=auth,
            data={"country": "CA"},
            files={"file": ("a.pdf", PDF, "application/pdf")},
        )
        assert refused.status_code == 409
        await runner.run_until_idle(timeout=10)  # the review ends (approved): the document may go
        assert (await client.delete(f"/documents/{passport['id']}", auth=auth)).status_code == 204

    async def test_other_tenants_see_nothing(self, client, auth, db, settings):
        person = await create(client, auth, PERSON)
        mine = await uploaded(client, auth, person["id"])
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        for method, path in (("GET", ""), ("GET", "/content"), ("DELETE", "")):
            response = await client.request(method, f"/documents/{mine['id']}{path}", auth=other)
            assert response.status_code == 404, (method, path)
        put = await client.put(
            f"/documents/{mine['id']}", auth=other, data={"country": "CA"}, files={"file": ("a.pdf", PDF)}
        )
        assert put.status_code == 404
        assert (await client.get("/documents", auth=other)).json()["data"] == []
