"""Kubernetes resource quantities ("500m", "4Gi", "1e3") parsed exactly, so they can be compared."""

import re
from decimal import Decimal
from typing import Final

_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
MAX_QUANTITY: Final = 2**63 - 1
"""Kubernetes keeps a quantity in an int64 of its base unit; larger ones are capped."""

# The grammar of k8s.io/apimachinery/pkg/api/resource: a signed decimal number followed by
# a binary suffix, a decimal suffix or a decimal exponent. The exponent has at most three
# digits: any quantity beyond that is out of Kubernetes' range, and Decimal would overflow.
_QUANTITY: Final = re.compile(
    r"(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d{1,3})?"
)


def parse_quantity(text: str) -> Decimal:
    """Return the value of a Kubernetes quantity, e.g. ``parse_quantity("1500m") == 1.5``.

    Raises ValueError with the accepted forms when `text` is not a quantity.
    """
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a Kubernetes quantity; write a number with an optional suffix, "
            "e.g. '500m' or '2' for CPU, '512Mi' or '4Gi' for memory"
        )
    number = Decimal(match["number"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Decimal(10) ** int(suffix[1:])
