"""Kubernetes quantities ("512", "500m", "4Ti", "1.5G") as exact numbers, and back."""

from __future__ import annotations

import re
from decimal import Decimal

_SUFFIX = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def parse(value: str | int | float) -> Decimal:
    """The quantity's value in base units (cores, bytes); ValueError when it is not one."""
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return Decimal(match.group(1)) * _SUFFIX[match.group(2) or ""]


def cpu(cores: Decimal) -> str:
    """Whole cores as "N", fractions as millicores "Nm" (rounded down)."""
    millis = int(cores * 1000)
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def memory(size: Decimal) -> str:
    """Bytes in the largest binary unit that keeps the number whole (rounded down to Mi)."""
    mebibytes = int(size / _SUFFIX["Mi"])
    if mebibytes == 0:
        return "0"
    for unit, factor in (("Ti", 2**20), ("Gi", 2**10)):
        if mebibytes % factor == 0 and mebibytes:
            return f"{mebibytes // factor}{unit}"
    return f"{mebibytes}Mi"
