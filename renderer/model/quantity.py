"""Kubernetes quantities ("512", "500m", "4Ti", "1.5G") as exact numbers, and back."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_UP, Context, Decimal
from typing import Literal

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
_DECIMAL_EXPONENT = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
_DECIMAL_EXPONENT["E"] = 18
_BINARY_EXPONENT = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_EXPONENT = re.compile(r"[eE][+-]?[0-9]+")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_NANO = Decimal("1e-9")
_BINARY_CAP = Decimal(2**63 - 1)
MAX_MAGNITUDE_EXPONENT = 24
"""fit refuses a quantity of 10^24 base units or more (`parse`). The API server takes any
exponent, but Kueue counts every amount as an int64 (cpu in millicores, the rest in units:
`pkg/resources`), so no larger amount means anything to it; bounded, fit's exact arithmetic
stays within `decimal`'s default precision."""


def _split(text: str) -> tuple[bool, str, str, str]:
    """apimachinery `pkg/api/resource/quantity.go` `parseQuantityString`, step for step: the
    sign, the digits before and after the point (either may be empty: `.5`, `5.`), and the
    suffix (a run of `eEinumkKMGTP`, then an optional sign and digits). ValueError where it
    returns `ErrFormatWrong`."""
    positive, pos, end = True, 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    number_end = pos
    while number_end < end and text[number_end].isascii() and text[number_end].isdigit():
        number_end += 1
    num, denom = text[pos:number_end], ""
    pos = number_end
    if pos < end and text[pos] == ".":
        pos += 1
        denom_end = pos
        while denom_end < end and text[denom_end].isascii() and text[denom_end].isdigit():
            denom_end += 1
        denom, pos = text[pos:denom_end], denom_end
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    if pos < end:
        raise ValueError("format")
    return positive, num.lstrip("0") or "0", denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int] | None:
    """`suffixHandler.interpret` (suffix.go): the decimal SI suffixes (n u m "" k M G T P E),
    the binary ones (Ki ... Ei), or `e`/`E` and a signed int64 exponent, which Go then
    converts to int32 (wrapping). None where it answers `ErrSuffix`."""
    if suffix in _DECIMAL_EXPONENT:
        return 10, _DECIMAL_EXPONENT[suffix]
    if suffix in _BINARY_EXPONENT:
        return 2, _BINARY_EXPONENT[suffix]
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix):
        exponent = int(suffix[1:])
        if -(2**63) <= exponent < 2**63:  # strconv.ParseInt(..., 10, 64)
            return 10, (exponent + 2**31) % 2**32 - 2**31  # int32(parsed)
    return None


_PARSED: dict[tuple[type, str | int | float], Decimal] = {}
"""`parse`'s answers, by the value's type and the value (`1` and `1.0` are equal keys but read
as `1` and `1.0`): the layers read the same few hundred amounts tens of thousands of times. A
value that is no quantity is not kept, and raises each time."""


def parse(value: str | int | float) -> Decimal:
    """The quantity's value in base units (cores, bytes); see `_parse`. Kept per value."""
    key = (type(value), value)
    try:
        return _PARSED[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable value: parsed, and refused, as any other
        return _parse(value)
    found = _parse(value)
    if len(_PARSED) >= 100_000:  # a hostile platform of distinct amounts: start again
        _PARSED.clear()
    _PARSED[key] = found
    return found


def _parse(value: str | int | float) -> Decimal:
    """The quantity's value in base units (cores, bytes), as the API server reads it
    (apimachinery `pkg/api/resource/quantity.go` `ParseQuantity`, after `UnmarshalJSON`'s
    `strings.TrimSpace`): `<sign><digits>.<digits><suffix>` where the sign, either run of
    digits and the point may be absent (`+1`, `.5`, `1.`, `-0`), and the suffix is a decimal SI
    one (n u m k M G T P E), a binary one (Ki Mi Gi Ti Pi Ei) or an exponent (`1e3`,
    `500E-3`). A value finer than a nano unit is rounded up, away from zero, to the next one
    (`1e-12` is 1n), and a binary value over 2^63-1 is capped there, as `ParseQuantity` does.
    ValueError when it is not one, and for 10^24 or more (`MAX_MAGNITUDE_EXPONENT`)."""
    text = str(value).strip()
    try:
        positive, num, denom, suffix = _split(text)
    except ValueError:
        raise ValueError(f"not a Kubernetes quantity: {value!r}") from None
    found = _interpret(suffix) if text else None
    if found is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    base, exponent = found
    digits = (num + denom).lstrip("0")
    if not digits:
        return Decimal(0)
    scale = exponent - len(denom) if base == 10 else -len(denom)
    magnitude = len(digits) + scale  # 10^(magnitude-1) <= number < 10^magnitude
    if base == 2 and magnitude > 20:  # over 10^19 bytes before the suffix: over the cap
        return _BINARY_CAP if positive else -_BINARY_CAP
    if base == 10 and magnitude > MAX_MAGNITUDE_EXPONENT:
        raise ValueError(
            f"not a quantity fit counts: {value!r} is 10^{MAX_MAGNITUDE_EXPONENT} or more, "
            "beyond the int64 amounts Kueue counts"
        )
    if base == 10 and magnitude <= -9:  # under one nano unit: rounded up to it
        return _NANO if positive else -_NANO
    exact = Context(prec=len(digits) + 2 * MAX_MAGNITUDE_EXPONENT)
    amount = Decimal((0, tuple(int(d) for d in digits), scale))
    if base == 2:
        amount = min(exact.multiply(amount, Decimal(2**exponent)), _BINARY_CAP)
    places = amount.as_tuple().exponent
    if isinstance(places, int) and places < -9:
        amount = amount.quantize(_NANO, rounding=ROUND_UP, context=exact)
    return amount if positive else -amount


INT64_MAX = 2**63 - 1
"""The largest amount Kubernetes and Kueue count: `Quantity.Value()` and `MilliValue()` are
int64s (apimachinery `quantity.go`: "this could overflow an int64"), the scheduler's
`framework.Resource` keeps MilliCPU and Memory as int64s, and Kueue v0.19.2
(`pkg/resources/requests.go` `ResourceValue`) counts CPU in millicores and everything else in
units as int64s, clamped there."""

Unit = Literal["cpu", "bytes", "count"]
"""What a quantity counts: CPU (in millicores), bytes (memory and storage), or a whole number
of something (GPUs and other extended resources, objects in a quota)."""

COUNT_MAX = INT64_MAX // 1000
"""The largest count the API server can tell is whole: `ValidateResourceQuantityValue` refuses
a fraction of an integer resource (an extended resource, a quota's object count) by testing
`MilliValue() % 1000`, and past this `MilliValue()` overflows its int64."""


def _exact(text: str) -> Decimal | None:
    """The quantity's value as written, with no rounding and no cap (`parse` rounds below a
    nano unit and caps binary amounts at 2^63-1, as `ParseQuantity` does); None when it is
    not a quantity. Amounts of 10^40 and more come back as 10^40: they are out of every
    range here, and no arithmetic on a written exponent of billions is attempted."""
    try:
        positive, num, denom, suffix = _split(text)
    except ValueError:
        return None
    found = _interpret(suffix) if text else None
    if found is None:
        return None
    base, exponent = found
    digits = (num + denom).lstrip("0")
    if not digits:
        return Decimal(0)
    scale = exponent - len(denom) if base == 10 else -len(denom)
    sign = 1 if positive else -1
    if base == 10 and len(digits) + scale > 40:
        return Decimal(sign) * Decimal(10) ** 40
    if base == 10 and len(digits) + scale < -40:  # nonzero, far below any unit counted
        return Decimal(sign) * Decimal(10) ** -40
    exact = Context(prec=len(digits) + 100)
    amount = Decimal((0, tuple(int(d) for d in digits), scale))
    if base == 2:
        amount = exact.multiply(amount, Decimal(2**exponent))
    return amount if positive else -amount


Problem = Literal["format", "negative", "finer", "fraction", "whole", "over"]


@dataclass(frozen=True, slots=True)
class RangeProblem:
    """Why Kubernetes or Kueue cannot count a quantity as written (`range_problem`)."""

    kind: Problem
    message: str
    most: str = ""
    """For "over": the largest amount that is counted, as a quantity (`9223372036854775807`,
    `576460752303423487m`)."""

    def __str__(self) -> str:
        return self.message


def range_problem(value: str | int, unit: Unit, times: int = 1) -> RangeProblem | None:
    """Why Kubernetes or Kueue cannot count `value` as written, `times` over, or None.

    - negative: the API server refuses a negative quota, limit or request (`pkg/apis/core/
      validation` `ValidateResourceQuantityValue` calls `ValidateNonnegativeQuantity`);
    - CPU finer than a millicore: the scheduler and Kueue read `MilliValue()`, which rounds
      it up, so `0.0000000001m` silently means 1m;
    - a fraction of a byte: the API server warns "fractional byte value ... is invalid, must be
      an integer" (`pkg/api/pod/warnings.go`) and `Value()` rounds it up;
    - a fraction of a count: `ValidateResourceQuantityValue` refuses it, and more than
      `COUNT_MAX` it can no longer tell;
    - more than `INT64_MAX` millicores or bytes: past what `MilliValue()`/`Value()` return,
      the scheduler counts and Kueue clamps to, and a binary amount over 2^63-1 is cut to it by
      `ParseQuantity` itself (8Ei is read as 2^63-1 bytes). `times` is how often gpuplane
      multiplies the value into one request (a container default, once per GPU of a pod)."""
    amount = _exact(str(value).strip())
    if amount is None:
        return RangeProblem("format", "is not a Kubernetes quantity")
    if amount < 0:
        return RangeProblem("negative", "is negative: Kubernetes refuses a negative amount")
    counted = amount * 1000 if unit == "cpu" else amount
    if counted != counted.to_integral_value():
        if unit == "cpu":
            return RangeProblem(
                "finer", "is finer than a millicore, the smallest CPU amount Kubernetes counts"
            )
        if unit == "count":
            return RangeProblem("whole", "is not a whole number: Kubernetes counts it in units")
        return RangeProblem("fraction", "is a fraction of a byte: Kubernetes counts whole bytes")
    most = (COUNT_MAX if unit == "count" else INT64_MAX) // times
    if counted <= most:
        return None
    largest = f"{most}m" if unit == "cpu" else str(most)
    shown = {"cpu": f"{most}m ({Decimal(most) / 1000} cores)", "bytes": f"{most} bytes"}.get(
        unit, str(most)
    )
    what = {"cpu": "CPU in millicores", "bytes": "bytes"}.get(unit, "its thousandths")
    over = f" {times} times over" if times > 1 else ""
    return RangeProblem(
        "over",
        f"is more than Kubernetes and Kueue can count{over}: they count {what} as a 64-bit "
        f"integer, so at most {shown}",
        largest,
    )


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


_DECIMAL_EXPONENT = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15}
_DECIMAL_EXPONENT["E"] = 18
_BINARY_EXPONENT = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {-3: "n", -2: "u", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}
_BINARY_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def go_string(value: Decimal, *, binary: bool) -> str:
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
    return go_string(value, binary=binary)
