"""Example accounts for the corridor tests: one valid account of every type, one invalid change of each."""

from __future__ import annotations

from typing import Any

import pytest

from platpay.accounts.validators import corridors
from platpay.errors import InvalidInput

PERSON = {"beneficiaryType": "INDIVIDUAL", "fullName": "Ana María Pérez"}
COMPANY = {"beneficiaryType": "BUSINESS", "legalName": "Acme Trading Ltd."}


def person(**extra: Any) -> dict[str, Any]:
    return {**PERSON, **extra}


def address(country: str) -> dict[str, str]:
    return {"line1": "1 Main Street", "postalCode": "00100", "country": country}


# One valid account of every type: (currency, accountInfo).
VALID: dict[str, tuple[str, dict[str, Any]]] = {
    "AED_ACCOUNT": (
        "AED",
        {
            "iban": "AE070331234567890123456",
            "swiftCode": "EBILAEAD",
            "beneficiary": person(address=address("AE")),
        },
    ),
    "BDT_ACCOUNT": (
        "BDT",
        {
            "accountNumber": "1234567890",
            "bankName": "BRAC_BANK",
            "branchCode": "11111",
            "beneficiary": COMPANY,
        },
    ),
    "BRL_ACCOUNT": (
        "BRL",
        {"pixKey": "52998224725", "pixKeyType": "CPF", "taxId": "52998224725", "beneficiary": PERSON},
    ),
    "BWP_ACCOUNT": (
        "BWP",
        {"phoneNumber": "+26771234567", "provider": "Orange Money", "beneficiary": PERSON},
    ),
    "CAD_ACCOUNT": (
        "CAD",
        {
            "bankCode": "003",
            "branchCode": "00012",
            "accountNumber": "1234567",
            "beneficiary": person(registrationNumber="A1234"),
        },
    ),
    "CNY_ACCOUNT": (
        "CNY",
        {"accountNumber": "6222020200112233445", "bankName": "ICBC", "beneficiary": PERSON},
    ),
    "COP_ACCOUNT": (
        "COP",
        {
            "accountNumber": "1234567890",
            "bankAccountType": "SAVINGS",
            "bankName": "Bancolombia",
            "beneficiary": person(documentType="CC", documentNumber="1020304050"),
        },
    ),
    "DKK_ACCOUNT": ("DKK", {"iban": "DK5000400440116243", "swiftCode": "DABADKKK", "beneficiary": PERSON}),
    "EGP_ACCOUNT": (
        "EGP",
        {
            "iban": "EG380019000500000000263180002",
            "bankName": "NATIONAL_BANK_OF_EGYPT",
            "beneficiary": PERSON,
        },
    ),
    "EUR_ACCOUNT": (
        "EUR",
        {
            "iban": "DE89370400440532013000",
            "swiftCode": "COBADEFFXXX",
            "beneficiary": person(countryOfResidence="DE"),
        },
    ),
    "GBP_ACCOUNT": ("GBP", {"sortCode": "404784", "accountNumber": "70872490", "beneficiary": PERSON}),
    "GHS_ACCOUNT": (
        "GHS",
        {"phoneNumber": "+233241234567", "bankName": "MTN_MOMO_GHANA", "beneficiary": PERSON},
    ),
    "GTQ_ACCOUNT": (
        "GTQ",
        {
            "accountNumber": "1234567890",
            "bankAccountType": "CHECKING",
            "bankName": "BANRURAL",
            "beneficiary": person(countryOfResidence="GT", phoneNumber="+50222123456"),
        },
    ),
    "HKD_ACCOUNT": (
        "HKD",
        {
            "bankName": "HSBC_HONG_KONG",
            "accountNumber": "123456789012",
            "swiftCode": "HSBCHKHHHKH",
            "beneficiary": PERSON,
        },
    ),
    "HTG_ACCOUNT": ("HTG", {"phoneNumber": "+50934567890", "beneficiary": PERSON}),
    "IDR_ACCOUNT": (
        "IDR",
        {
            "bankName": "BANK_CENTRAL_ASIA",
            "accountNumber": "1234567890",
            "swiftCode": "CENAIDJA",
            "phoneNumber": "+6281234567890",
            "beneficiary": PERSON,
        },
    ),
    "INR_ACCOUNT": ("INR", {"vpa": "user@upi", "beneficiary": PERSON}),
    "JMD_ACCOUNT": (
        "JMD",
        {
            "accountNumber": "1234567890",
            "branchCode": "11111",
            "bankAccountType": "SAVINGS",
            "bankName": "National Commercial Bank Jamaica",
            "beneficiary": person(address=address("JM"), phoneNumber="+18765550123"),
        },
    ),
    "KES_ACCOUNT": ("KES", {"phoneNumber": "+254712345678", "provider": "M-PESA", "beneficiary": PERSON}),
    "MWK_ACCOUNT": (
        "MWK",
        {"phoneNumber": "+265991234567", "provider": "Airtel Money", "beneficiary": PERSON},
    ),
    "MXN_ACCOUNT": ("MXN", {"clabeNumber": "002010077777777771", "beneficiary": PERSON}),
    "MYR_ACCOUNT": (
        "MYR",
        {
            "bankName": "MAYBANK",
            "accountNumber": "514012345678",
            "swiftCode": "MBBEMYKL",
            "beneficiary": PERSON,
        },
    ),
    "NGN_ACCOUNT": ("NGN", {"accountNumber": "0123456789", "bankName": "GTBANK", "beneficiary": PERSON}),
    "PHP_ACCOUNT": (
        "PHP",
        {"bankName": "BDO_UNIBANK", "accountNumber": "001234567890", "beneficiary": PERSON},
    ),
    "PKR_ACCOUNT": (
        "PKR",
        {
            "bankName": "HBL",
            "accountNumber": "1123456702",
            "iban": "PK36SCBL0000001123456702",
            "beneficiary": PERSON,
        },
    ),
    "RWF_ACCOUNT": ("RWF", {"phoneNumber": "+250781234567", "provider": "MTN", "beneficiary": PERSON}),
    "SGD_ACCOUNT": (
        "SGD",
        {
            "bankName": "DBS_BANK",
            "accountNumber": "0123456789",
            "swiftCode": "DBSSSGSG",
            "beneficiary": PERSON,
        },
    ),
    "SLV_ACCOUNT": (
        "USD",
        {
            "bankName": "BANCO_CUSCATLAN",
            "accountNumber": "0123456789",
            "bankAccountType": "CHECKING",
            "beneficiary": PERSON,
        },
    ),
    "THB_ACCOUNT": (
        "THB",
        {
            "bankName": "BANGKOK_BANK",
            "accountNumber": "1234567890",
            "swiftCode": "BKKBTHBK",
            "beneficiary": PERSON,
        },
    ),
    "TZS_ACCOUNT": ("TZS", {"phoneNumber": "+255712345678", "provider": "M-Pesa", "beneficiary": PERSON}),
    "UGX_ACCOUNT": ("UGX", {"phoneNumber": "+256772123456", "provider": "MTN", "beneficiary": PERSON}),
    "USD_ACCOUNT": (
        "USD",
        {"accountNumber": "123456789", "routingNumber": "011000015", "beneficiary": PERSON},
    ),
    "VND_ACCOUNT": (
        "VND",
        {
            "bankName": "VIETCOMBANK",
            "accountNumber": "0011000123456",
            "swiftCode": "BFTVVNVX",
            "beneficiary": PERSON,
        },
    ),
    "XAF_ACCOUNT": (
        "XAF",
        {"phoneNumber": "+237671234567", "provider": "MTN", "region": "CM", "beneficiary": PERSON},
    ),
    "XOF_ACCOUNT": (
        "XOF",
        {"phoneNumber": "+221771234567", "provider": "Wave", "region": "SN", "beneficiary": PERSON},
    ),
    "ZAR_ACCOUNT": (
        "ZAR",
        {"accountNumber": "1234567890", "bankName": "CAPITEC_BANK", "beneficiary": PERSON},
    ),
    "ZMW_ACCOUNT": ("ZMW", {"phoneNumber": "+260971234567", "provider": "Airtel", "beneficiary": PERSON}),
    "SWIFT_ACCOUNT": (
        "JPY",
        {
            "country": "JP",
            "swiftCode": "BOTKJPJT",
            "bankName": "MUFG_BANK",
            "accountNumber": "1234567",
            "beneficiary": COMPANY,
        },
    ),
    "SPARK_WALLET": (
        "BTC",
        {"address": "spark1pgssyetcp9xwxhf4hcnp5xxk0sav9thgmdxw3jm2afhzjksej2sfxrsk26tfzy"},
    ),
    "SOLANA_WALLET": ("USDC", {"address": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"}),
    "TRON_WALLET": ("USDT", {"address": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"}),
    "POLYGON_WALLET": ("USDC", {"address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}),
    "BASE_WALLET": ("USDC", {"address": "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"}),
    "ETHEREUM_WALLET": ("USDC", {"address": "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB"}),
    "LIGHTNING": ("BTC", {"lightningAddress": "john.doe@lightningwallet.com"}),
}

# At least one invalid account of every type: (currency, changes to the valid info, failing field).
INVALID: dict[str, tuple[str, dict[str, Any], str]] = {
    "AED_ACCOUNT": ("AED", {"iban": "AE070331234567890123457"}, "iban"),
    "BDT_ACCOUNT": ("BDT", {"accountNumber": None}, ""),
    "BRL_ACCOUNT": ("BRL", {"taxId": "52998224726"}, "taxId"),
    "BWP_ACCOUNT": ("BWP", {"phoneNumber": "26771234567"}, "phoneNumber"),
    "CAD_ACCOUNT": ("CAD", {"bankCode": "3"}, "bankCode"),
    "CNY_ACCOUNT": ("CNY", {"bankName": "Example Bank"}, "bankName"),
    "COP_ACCOUNT": ("COP", {"bankAccountType": "CURRENT"}, "bankAccountType"),
    "DKK_ACCOUNT": ("DKK", {"iban": "DE89370400440532013000"}, "iban"),
    "EGP_ACCOUNT": ("EGP", {"iban": "EG38001900050000000026318000"}, "iban"),
    "EUR_ACCOUNT": ("EUR", {"iban": "SA0380000000608010167519"}, "iban"),
    "GBP_ACCOUNT": ("GBP", {"accountNumber": "7087249"}, "accountNumber"),
    "GHS_ACCOUNT": ("GHS", {"bankName": None}, "bankName"),
    "GTQ_ACCOUNT": ("GTQ", {"bankAccountType": "checking"}, "bankAccountType"),
    "HKD_ACCOUNT": ("HKD", {"swiftCode": "HSBCHK"}, "swiftCode"),
    "HTG_ACCOUNT": ("HTG", {"phoneNumber": "+0934567890"}, "phoneNumber"),
    "IDR_ACCOUNT": ("IDR", {"phoneNumber": "+6591234567"}, "phoneNumber"),
    "INR_ACCOUNT": ("INR", {"vpa": "user@ok.hdfc"}, "vpa"),
    "JMD_ACCOUNT": ("JMD", {"branchCode": "1111"}, "branchCode"),
    "KES_ACCOUNT": ("KES", {"phoneNumber": "+255712345678"}, "phoneNumber"),
    "MWK_ACCOUNT": ("MWK", {"provider": None}, "provider"),
    "MXN_ACCOUNT": ("MXN", {"clabeNumber": "002010077777777772"}, "clabeNumber"),
    "MYR_ACCOUNT": ("MYR", {"swiftCode": "MBBEZZKL"}, "swiftCode"),
    "NGN_ACCOUNT": ("NGN", {"accountNumber": "123456789"}, "accountNumber"),
    "PHP_ACCOUNT": ("PHP", {"accountNumber": "1234567"}, "accountNumber"),
    "PKR_ACCOUNT": ("PKR", {"iban": "PK36SCBL0000001123456703"}, "iban"),
    "RWF_ACCOUNT": ("RWF", {"phoneNumber": "+250 781 234 567"}, "phoneNumber"),
    "SGD_ACCOUNT": ("SGD", {"swiftCode": None}, "swiftCode"),
    "SLV_ACCOUNT": ("SVC", {}, "currency"),
    "THB_ACCOUNT": ("THB", {"routingNumber": "011000015"}, "routingNumber"),
    "TZS_ACCOUNT": ("TZS", {"phoneNumber": "+254712345678"}, "phoneNumber"),
    "UGX_ACCOUNT": ("UGX", {"phoneNumber": 256772123456}, "phoneNumber"),
    "USD_ACCOUNT": ("USD", {"routingNumber": "011000016"}, "routingNumber"),
    "VND_ACCOUNT": ("VND", {"bankName": "BDO_UNIBANK"}, "bankName"),
    "XAF_ACCOUNT": ("XAF", {"region": "SN"}, "region"),
    "XOF_ACCOUNT": ("XOF", {"region": None}, "region"),
    "ZAR_ACCOUNT": ("ZAR", {"accountNumber": "12345678"}, "accountNumber"),
    "ZMW_ACCOUNT": ("ZMW", {"phoneNumber": "+26097123456"}, "phoneNumber"),
    "SWIFT_ACCOUNT": ("JPY", {"accountNumber": None}, ""),
    "SPARK_WALLET": (
        "BTC",
        {"address": "spark1pgssyuuuhnrrdjswal5c3s3rafw9w3y5dd4cjy3duxlf7hjzkp0rqx6dj6mrhu"},
        "address",
    ),
    "SOLANA_WALLET": ("USDC", {"address": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt0v"}, "address"),
    "TRON_WALLET": ("USDT", {"address": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u"}, "address"),
    "POLYGON_WALLET": ("USDC", {"address": "0xAbCDEF1234567890aBCdEf1234567890ABcDef12"}, "address"),
    "BASE_WALLET": ("USDC", {"address": "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d35"}, "address"),
    "ETHEREUM_WALLET": ("USDT", {}, "currency"),
    "LIGHTNING": (
        "BTC",
        {"invoice": "lnbc1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypq"},
        "",
    ),
}


def validate(currency: str, info: object, **kwargs: Any) -> dict[str, Any]:
    return corridors.validate_account_info(currency=currency, account_info=info, **kwargs)


def problems_of(currency: str, info: object, **kwargs: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        validate(currency, info, **kwargs)
    return caught.value


def fields_of(error: InvalidInput) -> list[str]:
    return [entry["field"] for entry in error.details["fields"]]
