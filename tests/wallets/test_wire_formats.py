"""Known-answer and cross-implementation tests of every byte format of INTERFACE-FACTS §6: HPKE (RFC 9180's
own vector, and pyhpke as an independent implementation with the wallet suite's info and AAD), base58check,
the API-key stamp, and the four bundles."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey

from platpay.kit.crypto import bundles, hpke, p256, stamps

# RFC 9180, Appendix A.3.1: DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode, sequence 0.
A31 = {
    "info": "4f6465206f6e2061204772656369616e2055726e",
    "skEm": "4995788ef4b9d6132b249ce59a77281493eb39af373d236a1fe415cb0c2d7beb",
    "skRm": "f3ce7fdae57e1a310d87f1ebbde6f328be0a99cdbcadf4d6589cf29de4b8ffd2",
    "pkRm": "04fe8c19ce0905191ebc298a9245792531f26f0cece2460639e8bc39cb7f706a826a779b4cf969b8a0e539c7f62fb3d30ad6aa8f80e30f1d128aafd68a2ce72ea0",
    "enc": "04a92719c6195d5085104f469a8b9814d5838ff72b60501e2c4466e5e67b325ac98536d7b61a1af4b78e5b7f951c0900be863c403ce65c9bfcb9382657222d18c4",
    "pt": "4265617574792069732074727574682c20747275746820626561757479",
    "aad": "436f756e742d30",
    "ct": "5ad590bb8baa577f8619db35a36311226a896e7342a6d836d8b7bcd2f20b6c7f9076ac232e3ab2523f39513434",
}
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


class TestHpke:
    def test_rfc9180_a31_known_answer(self) -> None:
        ephemeral = p256.private_key_from_scalar(bytes.fromhex(A31["skEm"]))
        recipient = p256.private_key_from_scalar(bytes.fromhex(A31["skRm"]))
        assert p256.uncompressed_hex(recipient.public_key()) == A31["pkRm"]
        sealed = hpke.seal_base(
            recipient.public_key(),
            bytes.fromhex(A31["pt"]),
            info=bytes.fromhex(A31["info"]),
            aad=bytes.fromhex(A31["aad"]),
            aead=hpke.AEAD_AES_128_GCM,
            ephemeral=ephemeral,
        )
        assert sealed.enc.hex() == A31["enc"] and sealed.ciphertext.hex() == A31["ct"]
        opened = hpke.open_base(
            recipient,
            bytes.fromhex(A31["enc"]),
            bytes.fromhex(A31["ct"]),
            info=bytes.fromhex(A31["info"]),
            aad=bytes.fromhex(A31["aad"]),
            aead=hpke.AEAD_AES_128_GCM,
        )
        assert opened == bytes.fromhex(A31["pt"])

    def _pyhpke(self):  # type: ignore[no-untyped-def]
        return CipherSuite.new(KEMId.DHKEM_P256_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES256_GCM)

    def test_pyhpke_opens_ours_with_the_wallet_info_and_aad(self) -> None:
        recipient = p256.generate_private_key()
        sealed = hpke.seal_to(recipient.public_key(), b"session scalar")
        suite = self._pyhpke()
        sk = KEMKey.from_pyca_cryptography_key(recipient)
        context = suite.create_recipient_context(sealed.enc, sk, info=b"turnkey_hpke")
        aad = sealed.enc + p256.encode_point(recipient.public_key())
        assert context.open(sealed.ciphertext, aad=aad) == b"session scalar"

    def test_ours_opens_pyhpke_with_the_wallet_info_and_aad(self) -> None:
        recipient = p256.generate_private_key()
        suite = self._pyhpke()
        pk = KEMKey.from_pyca_cryptography_key(recipient.public_key())
        enc, context = suite.create_sender_context(pk, info=b"turnkey_hpke")
        ciphertext = context.seal(
            b'{"otp_code":"000000"}', aad=enc + p256.encode_point(recipient.public_key())
        )
        assert hpke.open_from(recipient, enc, ciphertext) == b'{"otp_code":"000000"}'
        compressed = p256.encode_point(p256.decode_point(enc), compressed=True)
        assert hpke.open_from(recipient, compressed, ciphertext) == b'{"otp_code":"000000"}'

    def test_a_wrong_key_or_aad_does_not_open(self) -> None:
        recipient = p256.generate_private_key()
        sealed = hpke.seal_to(recipient.public_key(), b"x")
        with pytest.raises(hpke.HpkeError):
            hpke.open_from(p256.generate_private_key(), sealed.enc, sealed.ciphertext)
        with pytest.raises(hpke.HpkeError):
            hpke.open_base(recipient, sealed.enc, sealed.ciphertext, info=b"turnkey_hpke")  # no AAD


class TestBase58Check:
    def test_known_answers(self) -> None:
        assert bundles.base58check_encode(bytes(21)) == "1111111111111111111114oLvT2"
        assert bundles.base58check_decode("1111111111111111111114oLvT2") == bytes(21)
        # Bitcoin's genesis coinbase address
        assert bundles.base58check_decode("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa").hex() == (
            "0062e907b15cbf27d5425399ebf6f0fb50ebb88f18"
        )

    def test_a_changed_character_fails_the_checksum(self) -> None:
        with pytest.raises(bundles.BundleMalformed):
            bundles.base58check_decode("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb")


class TestStamp:
    def test_the_header_is_base64url_of_compact_json_in_key_order(self) -> None:
        key = p256.generate_private_key()
        header = stamps.make(key, "payload")
        assert "=" not in header and "+" not in header and "/" not in header
        raw = base64.urlsafe_b64decode(header + "==").decode()
        assert raw.startswith('{"publicKey":"0') and list(json.loads(raw)) == [
            "publicKey",
            "scheme",
            "signature",
        ]
        stamp = json.loads(raw)
        assert len(stamp["publicKey"]) == 66 and stamp["scheme"] == "SIGNATURE_SCHEME_TK_API_P256"
        assert stamp["signature"] == stamp["signature"].lower()
        assert stamps.parse(header).verifies("payload") and not stamps.parse(header).verifies("payload ")

    def test_high_s_and_low_s_signatures_both_verify(self) -> None:
        key = p256.generate_private_key()
        der = p256.sign_der(key, b"payload")
        r, s = decode_dss_signature(der)
        flipped = encode_dss_signature(r, P256_ORDER - s)
        for signature in (der, flipped):
            header = base64.urlsafe_b64encode(
                json.dumps(
                    {
                        "publicKey": p256.compressed_hex(key.public_key()),
                        "scheme": stamps.SCHEME,
                        "signature": signature.hex(),
                    }
                ).encode()
            ).decode()
            assert stamps.parse(header).verifies("payload")

    def test_an_uncompressed_public_key_is_read_as_the_same_point(self) -> None:
        key = p256.generate_private_key()
        body = {
            "publicKey": p256.uncompressed_hex(key.public_key()),
            "scheme": stamps.SCHEME,
            "signature": p256.sign_der(key, b"p").hex(),
        }
        parsed = stamps.parse(base64.urlsafe_b64encode(json.dumps(body).encode()).decode())
        assert parsed.public_key_hex == p256.compressed_hex(key.public_key()) and parsed.verifies("p")


class TestBundles:
    def test_session_key_bundle_is_base58check_of_compressed_enc_and_ciphertext(self) -> None:
        client = p256.generate_private_key()
        scalar = p256.scalar_bytes(p256.generate_private_key())
        bundle = bundles.credential_bundle(client.public_key(), scalar)
        raw = bundles.base58check_decode(bundle)
        assert raw[0] in (2, 3) and len(raw) == 33 + 32 + 16
        assert bundles.open_credential_bundle(bundle, client) == scalar

    def test_target_bundle_and_otp_attempt(self) -> None:
        target, signer = p256.generate_private_key(), p256.generate_private_key()
        text = bundles.target_bundle(target.public_key(), signer=signer, organization_id="org")
        envelope = json.loads(text)
        assert list(envelope) == ["version", "data", "dataSignature", "enclaveQuorumPublic"]
        data = bytes.fromhex(envelope["data"])
        assert json.loads(data)["targetPublic"] == p256.uncompressed_hex(target.public_key())
        assert p256.verify_der(
            p256.public_key_from_hex(envelope["enclaveQuorumPublic"]),
            bytes.fromhex(envelope["dataSignature"]),
            data,
        )
        tek = p256.generate_private_key()
        sealed_text = bundles.seal_otp_attempt(
            text, otp_code="000000", public_key_hex=p256.uncompressed_hex(tek.public_key())
        )
        assert set(json.loads(sealed_text)) == {"encappedPublic", "ciphertext"}
        attempt = bundles.open_otp_attempt(bundles.parse_sealed(sealed_text), target)
        assert attempt.otp_code == "000000"
        assert p256.compressed_hex(attempt.public_key) == p256.compressed_hex(tek.public_key())

    @pytest.mark.parametrize("signed", [False, True], ids=["sandbox", "production"])
    def test_export_bundle(self, signed: bool) -> None:
        client = p256.generate_private_key()
        signer = p256.generate_private_key() if signed else None
        text = bundles.export_bundle(
            client.public_key(), b"abandon ability", organization_id="org", signer=signer
        )
        envelope = json.loads(text)
        assert (envelope["dataSignature"] != "") is signed and (
            envelope["enclaveQuorumPublic"] != ""
        ) is signed
        data = json.loads(bytes.fromhex(envelope["data"]))
        assert data["organizationId"] == "org" and len(bytes.fromhex(data["encappedPublic"])) == 65
        assert bundles.open_export_bundle(text, client) == b"abandon ability"

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "[]",
            '{"encappedPublic": "zz", "ciphertext": "00"}',
            '{"encappedPublic": "04", "ciphertext": "00"}',
        ],
    )
    def test_malformed_otp_bundles(self, text: str) -> None:
        with pytest.raises(bundles.BundleMalformed):
            bundles.parse_sealed(text)


def test_points_compare_in_either_form() -> None:
    key = p256.generate_private_key().public_key()
    for form in (p256.compressed_hex(key), p256.uncompressed_hex(key)):
        assert p256.compressed_hex(p256.public_key_from_hex(form)) == p256.compressed_hex(key)
    with pytest.raises(ValueError):
        p256.public_key_from_hex("05" + "00" * 32)
    assert isinstance(key, ec.EllipticCurvePublicKey)
