"""Blockchain address validators against published test vectors.

Sources: Bitcoin Core's base58_encode_decode.json; BIP-173 and BIP-350 bech32/bech32m vectors; the Keccak
team's Keccak-256 digests; EIP-55's checksum vectors; well-known Solana (system program, USDC mint, token
program) and Tron (USDT contract) addresses; a Spark SDK address with the legacy "sp" prefix.
"""

from __future__ import annotations

import hashlib

import pytest

from platpay.accounts.validators import IdentifierError, encodings, keccak, wallets


class TestBase58:
    @pytest.mark.parametrize(
        ("hex_bytes", "text"),
        [
            ("", ""),
            ("61", "2g"),
            ("626262", "a3gV"),
            ("636363", "aPEr"),
            ("73696d706c792061206c6f6e6720737472696e67", "2cFupjhnEsSn59qHXstmK2ffpLv2"),
            ("00eb15231dfceb60925886b67d065299925915aeb172c06647", "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"),
            ("516b6fcd0f", "ABnLTmg"),
            ("bf4f89001e670274dd", "3SEo3LWLoPntC"),
            ("572e4794", "3EFU7m"),
            ("ecac89cad93923c02321", "EJDM8drfXA6uyA"),
            ("10c8511e", "Rt5zm"),
            ("00000000000000000000", "1111111111"),
        ],
    )
    def test_bitcoin_core_vectors_round_trip(self, hex_bytes: str, text: str) -> None:
        assert encodings.base58_encode(bytes.fromhex(hex_bytes)) == text
        assert encodings.base58_decode(text) == bytes.fromhex(hex_bytes)

    @pytest.mark.parametrize("text", ["0abc", "Oabc", "Iabc", "labc"])
    def test_characters_outside_the_alphabet_fail(self, text: str) -> None:
        with pytest.raises(IdentifierError, match="not in the base58 alphabet"):
            encodings.base58_decode(text)

    def test_base58check_round_trips_and_detects_a_changed_character(self) -> None:
        encoded = encodings.base58check_encode(b"\x00" + bytes(range(20)))
        assert encodings.base58check_decode(encoded) == b"\x00" + bytes(range(20))
        tampered = encoded[:-1] + ("2" if encoded[-1] != "2" else "3")
        with pytest.raises(IdentifierError, match="checksum"):
            encodings.base58check_decode(tampered)


class TestBech32:
    @pytest.mark.parametrize(
        "text",
        [
            "A12UEL5L",
            "a12uel5l",
            "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
            "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
            "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w",
            "?1ezyfcl",
        ],
    )
    def test_bip173_valid_strings_decode_as_bech32(self, text: str) -> None:
        assert encodings.bech32_decode(text)[2] is encodings.Bech32Variant.BECH32

    @pytest.mark.parametrize(
        "text",
        [
            "A1LQFN3A",
            "a1lqfn3a",
            "an83characterlonghumanreadablepartthatcontainsthetheexcludedcharactersbioandnumber11sg7hg6",
            "abcdef1l7aum6echk45nj3s0wdvt2fg8x9yrzpqzd3ryx",
            "split1checkupstagehandshakeupstreamerranterredcaperredlc445v",
            "?1v759aa",
        ],
    )
    def test_bip350_valid_strings_decode_as_bech32m(self, text: str) -> None:
        assert encodings.bech32_decode(text)[2] is encodings.Bech32Variant.BECH32M

    @pytest.mark.parametrize(
        "text",
        [
            "pzry9x0s0muk",
            "1pzry9x0s0muk",
            "x1b4n0q5v",
            "li1dgmt3",
            "A1G7SGD8",
            "10a06t8",
            "1qzzfhee",
            "a12UEL5L",
            "de1lg7wt\xff",
        ],
    )
    def test_bip173_invalid_strings_fail(self, text: str) -> None:
        with pytest.raises(IdentifierError):
            encodings.bech32_decode(text)

    def test_encode_and_decode_round_trip(self) -> None:
        encoded = encodings.bech32_encode("test", [0, 1, 2, 31], encodings.Bech32Variant.BECH32M)
        assert encodings.bech32_decode(encoded) == ("test", [0, 1, 2, 31], encodings.Bech32Variant.BECH32M)


class TestKeccak256:
    @pytest.mark.parametrize(
        ("message", "digest"),
        [
            (b"", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"),
            (b"abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"),
            (
                b"The quick brown fox jumps over the lazy dog",
                "4d741b6f1eb29cb2a9b9911c82f56fa8d73b04959d3d9d222895df6c0b28aa15",
            ),
        ],
    )
    def test_known_digests(self, message: bytes, digest: str) -> None:
        assert keccak.keccak256(message).hex() == digest

    def test_it_is_not_fips_202_sha3(self) -> None:
        assert keccak.keccak256(b"").hex() != hashlib.sha3_256(b"").hexdigest()

    @pytest.mark.parametrize("length", [0, 1, 135, 136, 137, 271, 272, 1000])
    def test_the_sponge_with_the_fips_202_suffix_matches_hashlib_across_block_boundaries(
        self, length: int
    ) -> None:
        data = (bytes(range(256)) * 4)[:length]
        assert keccak._sponge_256(data, domain_suffix=0x06) == hashlib.sha3_256(data).digest()


EIP55_VECTORS = [
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
    "0xde709f2102306220921060314715629080e2fb77",
    "0x27b1fdb04752bbc536007a920d24acb045561c26",
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
]


class TestEvmAddress:
    @pytest.mark.parametrize("address", EIP55_VECTORS)
    def test_eip55_vectors_pass_unchanged(self, address: str) -> None:
        assert wallets.validate_evm_address(address) == address

    @pytest.mark.parametrize("address", EIP55_VECTORS[2:])
    def test_checksum_computation_matches_the_eip(self, address: str) -> None:
        assert wallets.eip55_checksum(address.lower()) == address

    def test_single_case_addresses_carry_no_checksum_and_pass(self) -> None:
        assert wallets.validate_evm_address("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed")
        assert wallets.validate_evm_address("0x5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED")

    def test_a_wrong_mixed_case_fails_and_shows_the_checksummed_form(self) -> None:
        with pytest.raises(IdentifierError, match="0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"):
            wallets.validate_evm_address("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD")

    def test_the_reference_example_address_is_not_eip55_checksummed(self) -> None:
        with pytest.raises(IdentifierError, match="EIP-55"):
            wallets.validate_evm_address("0xAbCDEF1234567890aBCdEf1234567890ABcDef12")

    @pytest.mark.parametrize(
        "address",
        [
            "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0x5aAeb6053F",
            "0xZZaeb6053f3e94c9b9a09f33669435e7ef1beaed",
        ],
    )
    def test_malformed_addresses_fail(self, address: str) -> None:
        with pytest.raises(IdentifierError, match="0x followed by 40"):
            wallets.validate_evm_address(address)


class TestSolanaAddress:
    @pytest.mark.parametrize(
        "address",
        [
            "11111111111111111111111111111111",
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
            "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
        ],
    )
    def test_known_addresses_pass(self, address: str) -> None:
        assert wallets.validate_solana_address(address) == address

    def test_an_address_decoding_to_other_than_32_bytes_fails(self) -> None:
        with pytest.raises(IdentifierError, match="decodes to 32 bytes"):
            wallets.validate_solana_address("1" * 33)

    def test_a_non_base58_character_fails(self) -> None:
        with pytest.raises(IdentifierError, match="base58"):
            wallets.validate_solana_address("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt0v")


class TestTronAddress:
    @pytest.mark.parametrize(
        "address", ["TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL"]
    )
    def test_known_addresses_pass(self, address: str) -> None:
        assert wallets.validate_tron_address(address) == address

    def test_a_changed_character_breaks_the_checksum(self) -> None:
        with pytest.raises(IdentifierError, match="checksum"):
            wallets.validate_tron_address("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u")

    def test_a_bitcoin_address_is_not_a_tron_address(self) -> None:
        with pytest.raises(IdentifierError, match="starting with T"):
            wallets.validate_tron_address("1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L")

    def test_a_t_address_with_another_version_byte_fails(self) -> None:
        address = encodings.base58check_encode(b"\x42" + bytes(20))
        with pytest.raises(IdentifierError):
            wallets.validate_tron_address(address)


SPARK_FIXTURE = "spark1pgssyetcp9xwxhf4hcnp5xxk0sav9thgmdxw3jm2afhzjksej2sfxrsk26tfzy"


class TestSparkAddress:
    def test_a_mainnet_address_passes(self) -> None:
        assert wallets.validate_spark_address(SPARK_FIXTURE) == SPARK_FIXTURE

    def test_legacy_short_prefixes_still_pass(self) -> None:
        address = "sp1pgss8u5vh4cldqxarcl2hnqgqelhupdt6g9e9y5x489t8ky355f3veh6dln5pf"
        assert wallets.validate_spark_address(address) == address

    def test_upper_case_is_stored_lower_case(self) -> None:
        assert wallets.validate_spark_address(SPARK_FIXTURE.upper()) == SPARK_FIXTURE

    @pytest.mark.parametrize("prefix", ["spark", "sparkt", "sparkrt", "sparks", "sparkl"])
    def test_every_network_prefix_round_trips(self, prefix: str) -> None:
        key = wallets.compressed_key_from_seed(hashlib.sha256(prefix.encode()).digest())
        address = wallets.make_spark_address(key, prefix=prefix)
        assert address.startswith(prefix + "1")
        assert wallets.validate_spark_address(address) == address

    def test_another_prefix_fails(self) -> None:
        key = wallets.compressed_key_from_seed(bytes(32))
        with pytest.raises(IdentifierError, match="not a Spark network"):
            wallets.validate_spark_address(
                encodings.bech32_encode(
                    "bc",
                    encodings.convert_bits(list(b"\x0a\x21" + key), 8, 5, pad=True),
                    encodings.Bech32Variant.BECH32M,
                )
            )

    def test_a_bech32_rather_than_bech32m_checksum_fails(self) -> None:
        words = encodings.convert_bits(
            list(b"\x0a\x21" + wallets.compressed_key_from_seed(bytes(32))), 8, 5, pad=True
        )
        with pytest.raises(IdentifierError, match="bech32m"):
            wallets.validate_spark_address(
                encodings.bech32_encode("spark", words, encodings.Bech32Variant.BECH32)
            )

    def test_the_reference_example_address_has_a_bad_checksum(self) -> None:
        with pytest.raises(IdentifierError, match="checksum"):
            wallets.validate_spark_address(
                "spark1pgssyuuuhnrrdjswal5c3s3rafw9w3y5dd4cjy3duxlf7hjzkp0rqx6dj6mrhu"
            )

    def test_a_spark_invoice_is_not_a_reusable_address(self) -> None:
        invoice = (
            "sparkrt1pgss8ter0fhc4c220f3zftmpz49h8wqte8eg3m5zkrraplgc048jucgszg3ssqgjzqqekv73mmh842yj7drsjwh7t7tz5zt8wf5k"
            "ghm5v4ehggszppjp5s80cg3qjdzc55g2567tn3lj705hdsr577tg8ah795mlnt6807y657qhkmgfkf9w75p4wz3l8vhua85zdn6ryj32z"
            "uj0p00pv2l5z4u47mw6h4s"
        )
        with pytest.raises(IdentifierError, match="Spark invoice"):
            wallets.validate_spark_address(invoice)

    def test_a_key_off_the_curve_fails(self) -> None:
        x = 0
        while wallets.is_compressed_secp256k1_key(b"\x02" + x.to_bytes(32, "big")):
            x += 1
        words = encodings.convert_bits(list(b"\x0a\x21\x02" + x.to_bytes(32, "big")), 8, 5, pad=True)
        with pytest.raises(IdentifierError, match="not a secp256k1 point"):
            wallets.validate_spark_address(
                encodings.bech32_encode("spark", words, encodings.Bech32Variant.BECH32M)
            )
        with pytest.raises(IdentifierError):
            wallets.make_spark_address(b"\x02" + x.to_bytes(32, "big"))
