"""Pure, database-free validation of external account details.

`corridors` is the entry point (one account type at a time, every problem reported at once); the other
modules are the building blocks: bank and tax checksums, contact formats, blockchain address encodings,
Lightning payment requests. Each `validate_*` function returns the canonical form of its input or raises
`IdentifierError` with a sentence saying which rule failed.
"""

from __future__ import annotations


class IdentifierError(ValueError):
    """An identifier (account number, address, key...) breaks a format or checksum rule; str() says which."""
