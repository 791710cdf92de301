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


_DECIMAL_SUFFIX = {-3: "n", -2: "u", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}
_BINARY_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def go_string(value: Decimal, binary: bool) -> str:
    """The quantity as Go's `resource.Quantity.String()` prints it (apimachinery
    `CanonicalizeBytes`): in a binary format, an integer of 1024 or more in the largest power of
    1024 that divides it (8G of bytes is `7812500Ki`), anything else in the decimal format, the
    largest power of 1000 that keeps the number whole (`500m`, `2`, `8G`)."""
    if value == 0:
        return "0"
    if binary and abs(value) >= 1024 and value == value.to_integral_value():
        mantissa, exponent = int(value), 0
        while mantissa % 1024 == 0 and exponent < len(_BINARY_SUFFIX) - 1:
            mantissa //= 1024
            exponent += 1
        return f"{mantissa}{_BINARY_SUFFIX[exponent]}"
    for exponent in range(6, -4, -1):
        scaled = value / (Decimal(1000) ** exponent)
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{_DECIMAL_SUFFIX[exponent]}"
    nanos = (value * Decimal(10) ** 9).to_integral_value(rounding="ROUND_CEILING")
    return f"{int(nanos)}n"  # Go rounds a finer value up to nanounits


def kueue_string(resource: str, value: Decimal) -> str:
    """An amount of a resource as Kueue v0.19.2 writes it in its messages
    (`pkg/resources/resource_formatter.go` `ResourceQuantity`): cpu from millicores in the
    decimal format, memory, ephemeral storage and hugepages in the binary one, the rest decimal."""
    binary = resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")
    return go_string(value, binary)
