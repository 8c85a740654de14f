"""Lightning destinations against the BOLT #11 examples and BOLT #12 offers-test.json /
format-string-test.json vectors, plus LUD-16 lightning addresses."""

from __future__ import annotations

import pytest

from platpay.accounts.validators import IdentifierError, encodings, lightning

BOLT11_EXAMPLES = [
    "lnbc1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpl2pkx2ctnv5sxxmmwwd5kgetjypeh2ursdae8g6twvus8g6rfwvs8qun0dfjkxaq8rkx3yf5tcsyz3d73gafnh3cax9rn449d9p5uxz9ezhhypd0elx87sjle52x86fux2ypatgddc6k63n7erqz25le42c4u4ecky03ylcqca784w",
    "lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpuaztrnwngzn3kdzw5hydlzf03qdgm2hdq27cqv3agm2awhz5se903vruatfhq77w3ls4evs3ch9zw97j25emudupq63nyw24cg27h2rspfj9srp",
    "lntb20m1pvjluezhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqfpp3x9et2e20v6pu37c5d9vax37wxq72un98kmzzhznpurw9sgl2v0nklu2g4d0keph5t7tj9tcqd8rexnd07ux4uv2cjvcqwaxgj7v4uwn5wmypjd5n69z2xm3xgksg28nwht7f6zspwp3f9t",
    # the reference's own example
    "lnbc15u1p3xnhl2pp5jptserfk3zk4qy42tlucycrfwxhydvlemu9pqr93tuzlv9cc7g3sdqsvfhkcap3xyhx7un8cqzpgxqzjcsp5f8c52y2stc300gl6s4xswtjpc37hrnnr3c9wvtgjfuvqmpm35evq9qyyssqy4lgd8tj637qcjp05rdpxxykjenthxftej7a2zzmwrmrl70fyj9hvj0rewhzj7jfyuwkwcg9g2jpwtk3wkjtwnkdks84hsnu8xps5vsq4gj5hs",
]


class TestBolt11Invoice:
    @pytest.mark.parametrize("invoice", BOLT11_EXAMPLES)
    def test_spec_examples_pass(self, invoice: str) -> None:
        assert lightning.validate_bolt11_invoice(invoice) == invoice

    def test_upper_case_and_a_uri_prefix_are_normalized(self) -> None:
        assert (
            lightning.validate_bolt11_invoice("lightning:" + BOLT11_EXAMPLES[1].upper()) == BOLT11_EXAMPLES[1]
        )

    def test_a_mistyped_character_breaks_the_checksum(self) -> None:
        with pytest.raises(IdentifierError, match="checksum"):
            lightning.validate_bolt11_invoice(BOLT11_EXAMPLES[0].replace("ca784w", "ca784x"))

    def test_a_bolt12_offer_is_not_an_invoice(self) -> None:
        with pytest.raises(IdentifierError):
            lightning.validate_bolt11_invoice(BOLT12_VALID[0])

    def test_a_prefix_other_than_a_lightning_network_fails(self) -> None:
        words = [0] * (7 + 104)
        with pytest.raises(IdentifierError, match="not ln"):
            lightning.validate_bolt11_invoice(
                encodings.bech32_encode("lnxy", words, encodings.Bech32Variant.BECH32)
            )

    def test_an_invoice_without_payment_hash_fails(self) -> None:
        words = [0] * (7 + 104)
        with pytest.raises(IdentifierError, match="payment hash"):
            lightning.validate_bolt11_invoice(
                encodings.bech32_encode("lnbc", words, encodings.Bech32Variant.BECH32)
            )

    def test_a_pico_amount_that_is_not_whole_millisatoshis_fails(self) -> None:
        words = [0] * (7 + 104)
        with pytest.raises(IdentifierError, match="millisatoshis"):
            lightning.validate_bolt11_invoice(
                encodings.bech32_encode("lnbc25p", words, encodings.Bech32Variant.BECH32)
            )


BOLT12_VALID = [
    "lno1zcss9mk8y3wkklfvevcrszlmu23kfrxh49px20665dqwmn4p72pksese",
    "lno1pgx9getnwss8vetrw3hhyuckyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd5xvxg",
    "lno1qgsyxjtl6luzd9t3pr62xr7eemp6awnejusgf6gw45q75vcfqqqqqqq2p32x2um5ypmx2cm5dae8x93pqthvwfzadd7jejes8q9lhc4rvjxd022zv5l44g6qah82ru5rdpnpj",
    "lno1pqpzwyq2p32x2um5ypmx2cm5dae8x93pqthvwfzadd7jejes8q9lhc4rvjxd022zv5l44g6qah82ru5rdpnpj",
    "lno1qcp4256ypqpzwyq2p32x2um5ypmx2cm5dae8x93pqthvwfzadd7jejes8q9lhc4rvjxd022zv5l44g6qah82ru5rdpnpj",
    "lno1pgx9getnwss8vetrw3hhyucvp5yqqqqqqqqqqqqqqqqqqqqkyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd5xvxg",
    "lno1pgx9getnwss8vetrw3hhyuckyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd5xvxfppf5x2mrvdamk7unvvs",
    "lno1pgx9getnwss8vetrw3hhyuckyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd5xvx078wdv5gg2dpjkcmr0wahhymry",
]
_FORMAT_VECTOR = "lno1pqps7sjqpgtyzm3qv4uxzmtsd3jjqer9wd3hy6tsw35k7msjzfpy7nz5yqcnygrfdej82um5wf5k2uckyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd5xvxg"


class TestBolt12Offer:
    @pytest.mark.parametrize("offer", BOLT12_VALID)
    def test_offers_test_vectors_pass(self, offer: str) -> None:
        assert lightning.validate_bolt12_offer(offer) == offer

    @pytest.mark.parametrize(
        "written",
        [
            _FORMAT_VECTOR.upper(),
            "l+" + _FORMAT_VECTOR[1:],
            "lno1pqps7sjqpgt+yzm3qv4uxzmtsd3jjqer9wd3hy6tsw3+5k7msjzfpy7nz5yqcn+ygrfdej82um5wf5k2uckyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd+5xvxg",
            "lno1pqps7sjqpgt+ yzm3qv4uxzmtsd3jjqer9wd3hy6tsw3+  5k7msjzfpy7nz5yqcn+\nygrfdej82um5wf5k2uckyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd+\r\n 5xvxg",
        ],
    )
    def test_format_string_vectors_normalize_to_one_offer(self, written: str) -> None:
        assert lightning.validate_bolt12_offer(written) == _FORMAT_VECTOR

    @pytest.mark.parametrize(
        ("offer", "reason"),
        [
            ("lno1", "empty"),
            ("lno1pg", "record header"),
            ("lno1pgpq", "truncated"),
            ("lno1zcssyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszpgz5znzfgdzs", "out of order"),
            ("lno1qgqszzs9g9xyjs69zcssyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqsz", "offer_chains"),
            ("lno1pgqcq93pqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqy", "UTF-8"),
            ("lno1pgz5znzfgdz3vggzqvpsxqcrqvpsxqcrqvpsxqcrqvpsxqcrqvpsxqcrqvpsxqcrqvps", "issuer_id"),
            (
                "lno1pgz5znzfgdz3vggzqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgp9qgr0u2xq4dh3kdevrf4zg6hx8a60jv0gxe0ptgyfc6xkryqqqqqqqq",
                "outside the offer ranges",
            ),
            (
                "lno1pgx9getnwss8vetrw3hhyucvzqzqqqqqqqqqqqqqqqqqqqqqqqqpvggzamrjghtt05kvkvpcp0a79gmy3nt6jsn98ad2xs8de6sl9qmgvcvs",
                "feature",
            ),
            (
                "lno1pqpzwyqkyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd5xvxg",
                "amount but no description",
            ),
            (
                "lno1qcp4256ypgx9getnwss8vetrw3hhyuckyypwa3eyt44h6txtxquqh7lz5djge4afgfjn7k4rgrkuag0jsd5xvxg",
                "currency but no amount",
            ),
            ("lno1pgx9getnwss8vetrw3hhyuc", "neither an issuer id nor a blinded path"),
            (_FORMAT_VECTOR + "+", "must join"),
            ("+" + _FORMAT_VECTOR, "must join"),
            ("ln++o1" + _FORMAT_VECTOR[4:], "must join"),
            ("lni1" + _FORMAT_VECTOR[4:], "starts with lno1"),
            ("lno1" + "b" * 10, "bech32 alphabet"),
        ],
    )
    def test_offers_test_invalid_vectors_fail(self, offer: str, reason: str) -> None:
        with pytest.raises(IdentifierError, match=reason):
            lightning.validate_bolt12_offer(offer)

    def test_the_reference_bolt12_example_is_really_a_bolt11_invoice_and_fails(self) -> None:
        with pytest.raises(IdentifierError, match="lno1"):
            lightning.validate_bolt12_offer(BOLT11_EXAMPLES[3])


class TestLightningAddress:
    @pytest.mark.parametrize(
        "address", ["john.doe@lightningwallet.com", "satoshi+tips@getalby.com", "a_b-c@sub.domain.io"]
    )
    def test_lud16_addresses_pass(self, address: str) -> None:
        assert lightning.validate_lightning_address(address) == address

    def test_addresses_are_stored_lower_case(self) -> None:
        assert (
            lightning.validate_lightning_address("John.Doe@LightningWallet.com")
            == "john.doe@lightningwallet.com"
        )

    def test_a_uma_address_is_pointed_at_the_uma_destination(self) -> None:
        with pytest.raises(IdentifierError, match="UMA address"):
            lightning.validate_lightning_address("$alice@sandbox.uma.money")

    @pytest.mark.parametrize(
        "address",
        [
            "john",
            "john@",
            "@wallet.com",
            "jo hn@wallet.com",
            "john@wallet",
            "john@-wallet.com",
            "jo!hn@wallet.com",
        ],
    )
    def test_malformed_addresses_fail(self, address: str) -> None:
        with pytest.raises(IdentifierError):
            lightning.validate_lightning_address(address)
