"""PEM certificates given in a stack's config: checked once, at the edge."""

from __future__ import annotations


def certificates(text: str) -> str:
    """``text`` if it holds one or more PEM certificates; a ValueError naming why not."""
    from cryptography import x509

    try:
        x509.load_pem_x509_certificates(text.encode())
    except ValueError as exc:
        raise ValueError(f"not a PEM certificate ({exc})") from None
    return text
