"""Policy on IdP group names a reviewer must be able to tell apart (Unicode TR39).

`renderer.policy.tenancy` refuses what breaks RBAC outright (`system:` groups, commas, controls,
invisible characters); this module refuses what reads as another name: characters outside
TR39's identifier profile, mixed scripts, and two groups of the platform that look alike.
docs/identities.md gives the rules and their tailoring.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from renderer.findings.diagnostics import Diagnostic, Location
from renderer.model.identifiers import escaped, identifier_problem, skeleton
from renderer.model.platform import Origin, Platform
from renderer.policy.rule import error, rule
from renderer.policy.tenancy import GROUP_FIELDS, group_problem


@dataclass(frozen=True, slots=True)
class GroupUse:
    """One group as a file binds it: the group, whose it is, and where it is written."""

    group: str
    holder: str
    """`team 'llm' (owners)`, `cluster 'prod-east' (platformOwners)`."""
    origin: Origin
    field: tuple[str, str, int]

    @property
    def at(self) -> Location:
        return self.origin.at(*self.field)


def group_uses(p: Platform) -> list[GroupUse]:
    """Every group every file binds: the clusters' platform owners first, then the teams'."""
    uses = [
        GroupUse(g, f"cluster '{c.name}' (platformOwners)", c.origin, ("spec", "platformOwners", i))
        for c in p.clusters.values()
        for i, g in enumerate(c.platform_owners)
    ]
    for team in p.teams.values():
        for field_name in GROUP_FIELDS:
            for i, g in enumerate(getattr(team, field_name)):
                holder = f"team '{team.name}' ({field_name})"
                uses.append(GroupUse(g, holder, team.origin, ("spec", field_name, i)))
    return uses


@rule("rbac-group-identifier", scope="team")
def group_names_identifiers(p: Platform) -> Iterator[Diagnostic]:
    """An IdP group name holds only characters Unicode TR39 allows in identifiers, from one
    script, in one written form.

    A group is bound as written, and a reviewer approves what they see. Unicode TR39 (Unicode
    Security Mechanisms) says which characters can be told apart: its General Security Profile
    keeps characters whose Identifier_Status is Allowed, and leaves out the blank-looking
    fillers (U+3164 HANGUL FILLER, U+115F HANGUL CHOSEONG FILLER, U+2800 BRAILLE PATTERN
    BLANK), invisible marks and joiners, and obsolete or technical letters. Its mixed-script
    detection refuses a name that takes letters from two scripts (Latin `llm-le` with U+0430
    CYRILLIC SMALL LETTER A), at the Highly Restrictive level: one script, or Latin with Han and
    Hiragana/Katakana, Han with Bopomofo, or Han with Hangul. Refused as well: a name not in
    Unicode normalization form NFC (an accented letter written as two code points next to the
    same letter written as one), digits of two numbering systems, a combining mark repeated
    over itself, two spaces in a row, and a name that is not ASCII but reads as an ASCII one
    (its TR39 skeleton is ASCII: a U+2010 HYPHEN for `-`, a whole-script Cyrillic `cop`).
    Printable ASCII (letters, digits, spaces and punctuation such as `@`, `/`, `.`;
    `rbac-group-characters` refuses `,` and `"`) is allowed as well: IdP groups are often
    e-mail addresses or paths, and a look-alike between ASCII names is
    `rbac-group-confusable`'s. Every report shows a non-ASCII group escaped (`\\u0430`), so
    what was written is what is read.

    To satisfy it: write the group in the team's `spec.owners`, `spec.members` or `spec.viewers`
    (or the cluster's `spec.platformOwners`) exactly as the IdP's groups claim spells it, in
    ASCII or in the letters of one script, e.g. `ml-platform-support` or `開発チーム`; a group
    whose IdP name mixes scripts needs a renamed group, or an alias, in the IdP.
    """
    for use in group_uses(p):
        if group_problem(use.group) is not None:
            continue  # rbac-group-characters says why
        problem = identifier_problem(use.group)
        if problem is not None:
            yield error(
                "rbac-group-identifier",
                f"{use.holder} group '{escaped(use.group)}' {problem}",
                use.at,
                "write the group in ASCII, or in the letters of one script, as the IdP names it",
            )


@rule("rbac-group-confusable")
def group_names_distinct(p: Platform) -> Iterator[Diagnostic]:
    """Two different IdP groups of the platform never look alike.

    Unicode TR39 calls two strings confusable when their skeletons are equal: each character
    replaced by the prototype it is drawn like in Unicode's confusables.txt (`rn` for `m`, `l`
    for `1` and `I`, Latin `a` for U+0430 CYRILLIC SMALL LETTER A). A group that looks like
    another team's or the platform owners' group reads, in review and in `diff`, as that group,
    while RBAC binds
    the one written: a team lead could name a look-alike of the platform owners' group and
    be read as granting them access. Groups are compared across every team file and every
    cluster's `spec.platformOwners`; the same group written the same way in several files is
    fine. The error is on each use the change adds (without change information, on every
    look-alike after the first one in file order), naming the group it looks like and where.

    To satisfy it: use the group the other file uses, written the same way, if it is the same
    IdP group; otherwise rename the group in the IdP so that the two names differ in more than
    look-alike characters, and write the new name in the team's `spec.owners`, `spec.members`
    or `spec.viewers`.
    """
    by_skeleton: dict[str, list[GroupUse]] = defaultdict(list)
    for use in group_uses(p):
        if group_problem(use.group) is None:
            by_skeleton[skeleton(use.group)].append(use)
    for uses in by_skeleton.values():
        if len({u.group for u in uses}) < 2:
            continue
        kept = next((u for u in uses if not p.is_changed(u.origin, u.field)), uses[0])
        for use in uses:
            if use.group == kept.group:
                continue
            yield error(
                "rbac-group-confusable",
                f"{use.holder} group '{escaped(use.group)}' looks like group "
                f"'{escaped(kept.group)}' of {kept.holder} in {kept.at.file}:{kept.at.line}",
                use.at,
                f"write '{escaped(kept.group)}' if it is that group, else a name that does not "
                "look like it",
                (("the group it looks like", kept.at),),
            )
