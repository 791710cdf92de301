"""Attacks with IdP group names that read as another name: the reviewer approves what they see,
RBAC binds what is written.

Each group is written as a YAML double-quoted escape, so this file shows what the attacker's
file holds. What Unicode says of each character is cited from its data files, as TR39
(Unicode Security Mechanisms) uses them: IdentifierStatus.txt (General Security Profile),
ScriptExtensions.txt (mixed-script detection) and confusables.txt (the skeleton).
"""

from __future__ import annotations

import pytest

from renderer.findings.diagnostics import Diagnostic
from tests.red_team.harness import Attempt, errors, refused_on

VISION = "teams/vision.yaml"
VIEWERS = "viewers: [ml-platform-support]"


def add_viewer(attempt: Attempt, written: str) -> int:
    """The attack: one more viewer group in vision's own file; the line it is on."""
    attempt.edit(VISION, VIEWERS, f'viewers: [ml-platform-support, "{written}"]')
    lines = attempt.path(VISION).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.strip().startswith("viewers:"))


def refused(attempt: Attempt, rule: str, line: int) -> Diagnostic:
    found = refused_on(attempt.findings(), VISION, rule)
    assert found.at.line == line, str(found)
    return found


# --- invisible marks: nonspacing marks that draw nothing (Mn, so not a format character) ------


@pytest.mark.parametrize(
    ("written", "what"),
    [
        # IdentifierStatus.txt: 034F ; Restricted # Default_Ignorable
        ("vision\\u034fleads", "U+034F COMBINING GRAPHEME JOINER"),
        # IdentifierStatus.txt: 17B4..17B5 ; Restricted # Default_Ignorable
        ("vision\\u17b4leads", "U+17B4 KHMER VOWEL INHERENT AQ"),
        # IdentifierStatus.txt: 180B..180D ; Restricted # Default_Ignorable
        ("vision\\u180bleads", "U+180B MONGOLIAN FREE VARIATION SELECTOR ONE"),
        # IdentifierStatus.txt: FE00..FE0F ; Restricted # Default_Ignorable
        ("vision-leads\\ufe00", "U+FE00 VARIATION SELECTOR-1"),
        # IdentifierStatus.txt: E0100..E01EF ; Restricted # Default_Ignorable
        ("vision-leads\\U000e0100", "U+E0100 VARIATION SELECTOR-17"),
    ],
)
def test_hide_an_invisible_mark_in_a_group(attempt: Attempt, written: str, what: str) -> None:
    line = add_viewer(attempt, written)
    found = refused(attempt, "rbac-group-identifier", line)
    assert f"holds {what}, which Unicode TR39 does not allow" in found.message
    assert f"group '{written}'" in found.message  # escaped as the YAML wrote it


# --- blank-looking fillers: letters or symbols that draw as a space, or as nothing ------------


@pytest.mark.parametrize(
    ("written", "what"),
    [
        ("vision\\u3164leads", "U+3164 HANGUL FILLER"),  # 3164 ; Restricted # Default_Ignorable
        ("vision\\u115fleads", "U+115F HANGUL CHOSEONG FILLER"),  # 115F..1160 ; Restricted
        ("vision\\u1160leads", "U+1160 HANGUL JUNGSEONG FILLER"),
        ("vision\\uffa0leads", "U+FFA0 HALFWIDTH HANGUL FILLER"),  # FFA0 ; Restricted
        ("vision\\u2800leads", "U+2800 BRAILLE PATTERN BLANK"),  # 2800..28FF ; Restricted
        ("\\u3164", "U+3164 HANGUL FILLER"),  # a group that reads as no group at all
    ],
)
def test_write_a_blank_filler_into_a_group(attempt: Attempt, written: str, what: str) -> None:
    line = add_viewer(attempt, written)
    found = refused(attempt, "rbac-group-identifier", line)
    assert f"holds {what}" in found.message


# --- homoglyphs from another script -------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "scripts"),
    [
        # ScriptExtensions/Scripts.txt: 0430 Cyrillic; confusables.txt: 0430 ; 0061 (a)
        ("vision-le\\u0430ds", "Latin and Cyrillic"),
        # 03BF ; Greek; confusables.txt: 03BF ; 006F (o)
        ("visi\\u03bfn-leads", "Latin and Greek"),
        # 0585 ; Armenian; confusables.txt: 0585 ; 006F (o)
        ("visi\\u0585n-leads", "Latin and Armenian"),
        # 0456 ; Cyrillic; confusables.txt: 0456 ; 0069 (i)
        ("v\\u0456sion-leads", "Latin and Cyrillic"),
    ],
)
def test_swap_a_letter_for_one_of_another_script(
    attempt: Attempt, written: str, scripts: str
) -> None:
    line = add_viewer(attempt, written)
    found = refused(attempt, "rbac-group-identifier", line)
    assert f"mixes the scripts {scripts}" in found.message


# --- compatibility forms: letters drawn like ASCII ones, not in the identifier profile ----------


@pytest.mark.parametrize(
    ("written", "what"),
    [
        ("\\ufb01nops", "U+FB01 LATIN SMALL LIGATURE FI"),  # FB00..FB06 ; Restricted # Not_NFKC
        ("\\U0001d425lm-leads", "U+1D425 MATHEMATICAL BOLD SMALL L"),  # Restricted # Not_NFKC
        ("\\uff4clm-leads", "U+FF4C FULLWIDTH LATIN SMALL LETTER L"),  # Restricted # Not_NFKC
    ],
)
def test_write_a_compatibility_look_alike(attempt: Attempt, written: str, what: str) -> None:
    line = add_viewer(attempt, written)
    found = refused(attempt, "rbac-group-identifier", line)
    assert f"holds {what}" in found.message


# --- one name, several written forms ------------------------------------------------------------


def test_write_an_accent_as_a_separate_mark(attempt: Attempt) -> None:
    """`e` + U+0301 draws as `é` (U+00E9), a different group to the IdP and to RBAC."""
    line = add_viewer(attempt, "vision-e\\u0301quipe")
    found = refused(attempt, "rbac-group-identifier", line)
    assert "is not in Unicode normalization form NFC" in found.message


def test_stack_a_mark_over_itself(attempt: Attempt) -> None:
    """TR39 5.4: U+015B (s with acute) then another acute draws as one accent."""
    line = add_viewer(attempt, "vision-lead\\u015b\\u0301")
    found = refused(attempt, "rbac-group-identifier", line)
    assert "repeats the combining mark U+0301 COMBINING ACUTE ACCENT" in found.message


def test_mix_numbering_systems(attempt: Attempt) -> None:
    """TR39 5.4: Devanagari one (U+0967) and ASCII 1 in a Devanagari name, one script."""
    line = add_viewer(attempt, "\\u091f\\u0940\\u092e-\\u09671")
    found = refused(attempt, "rbac-group-identifier", line)
    assert "mixes digits of two numbering systems" in found.message


# --- names that read as an ASCII name they are not (their skeleton is ASCII) -------------------


@pytest.mark.parametrize(
    ("written", "what"),
    [
        # IdentifierStatus.txt: 2010 ; Allowed; confusables.txt: 2010 ; 002D
        ("vision\\u2010leads", "U+2010 HYPHEN draws like U+002D HYPHEN-MINUS"),
        # 2019 ; Allowed; confusables.txt: 2019 ; 0027
        ("vision\\u2019s-leads", "U+2019 RIGHT SINGLE QUOTATION MARK draws like U+0027"),
        # 0131 ; Allowed (Latin, so no mixed script); confusables.txt: 0131 ; 0069
        ("v\\u0131sion-leads", "U+0131 LATIN SMALL LETTER DOTLESS I draws like U+0069"),
        # a whole-script Cyrillic `cop`, bound nowhere else: 0441 ; 0063, 043E ; 006F, 0440 ; 0070
        ("\\u0441\\u043e\\u0440", "U+0441 CYRILLIC SMALL LETTER ES draws like U+0063"),
    ],
)
def test_write_a_name_that_reads_as_ascii(attempt: Attempt, written: str, what: str) -> None:
    line = add_viewer(attempt, written)
    found = refused(attempt, "rbac-group-identifier", line)
    assert "reads as an ASCII name it is not" in found.message
    assert what in found.message


def test_write_two_spaces_that_read_as_one(attempt: Attempt) -> None:
    line = add_viewer(attempt, "ML  Platform Support")
    found = refused(attempt, "rbac-group-identifier", line)
    assert "two spaces in a row" in found.message


# --- look-alikes of another file's group (the skeleton) -----------------------------------------


@pytest.mark.parametrize(
    ("written", "looks_like", "holder", "file"),
    [
        # confusables.txt: 006D ; 0072 006E (m reads as rn): the other teams' viewer group
        ("rnl-platform-support", "ml-platform-support", "team 'llm' (viewers)", "teams/llm.yaml"),
        # 0031 ; 006C (1 reads as l): the platform owners' group of the cluster files
        (
            "p1atform-admins",
            "platform-admins",
            "cluster 'prod-east' (platformOwners)",
            "clusters/prod-east.yaml",
        ),
        # a whole-script Cyrillic `speech` (s, p, e, e, c, h), single-script and so allowed:
        # 0455 ; 0073, 0440 ; 0070, 0435 ; 0065, 0441 ; 0063, 04BB ; 0068
        (
            "\\u0455\\u0440\\u0435\\u0435\\u0441\\u04bb",
            "speech",
            "team 'speech' (members)",
            "teams/speech.yaml",
        ),
        # a whole-script Cyrillic `search`: 0433 ; 0072 (r)
        (
            "\\u0455\\u0435\\u0430\\u0433\\u0441\\u04bb",
            "search",
            "team 'search' (members)",
            "teams/search.yaml",
        ),
    ],
)
def test_name_a_look_alike_of_another_files_group(
    attempt: Attempt, written: str, looks_like: str, holder: str, file: str
) -> None:
    line = add_viewer(attempt, written)
    found = refused(attempt, "rbac-group-confusable", line)
    assert found.message.startswith(
        f"team 'vision' (viewers) group '{written}' looks like group '{looks_like}' of {holder}"
    )
    assert found.notes[0][1].file == file


def test_a_look_alike_from_a_new_team_file(attempt: Attempt) -> None:
    """The new file's group is the look-alike even when it sorts first: the change says so."""
    from renderer.pipeline import load_platform

    text = attempt.path("teams/speech.yaml").read_text().replace("name: speech\n", "name: aaa\n")
    text = text.replace("name: speech-", "name: aaa-").replace("[speech-leads]", "[vision-1eads]")
    attempt.write("teams/aaa.yaml", text)
    diagnostics = load_platform(attempt.root, changed={"teams/aaa.yaml": None}).diagnostics
    (found,) = errors(diagnostics, "rbac-group-confusable")
    assert found.at.file == "teams/aaa.yaml"
    assert "looks like group 'vision-leads' of team 'vision' (owners)" in found.message
