"""What every policy topic shares: the `Rule` type, the `rule` decorator and the finding helpers.

A rule is a function from the Platform to the Diagnostics it finds; its docstring is what
`gpuplane explain RULE` prints. Topic modules import this one, never `check`, so no circle forms.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from renderer.findings.diagnostics import Diagnostic, Location, closest
from renderer.findings.rules import document_rule
from renderer.model.platform import Platform, Pool

RuleFunction = Callable[[Platform], Iterable[Diagnostic]]

Scope = Literal["platform", "team"]
"""What a rule's findings depend on. `team`: each finding in a team file is a function of that
file and of the files that are not team files alone, and each finding elsewhere of those others
alone; so the findings of a platform with one team file changed are the recorded ones of the
other team files and those of the platform with only that team (`model.view.team_slice`).
tests/test_policy_scope.py holds every team rule to it. `platform`: anything may matter (sums
over teams, names compared across them)."""


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    check: RuleFunction
    scope: Scope = "platform"


POLICY: list[Rule] = []
"""Every registered rule; `check.check_policy` runs them, and a test may take one out."""


def rule(rule_id: str, *, scope: Scope = "platform") -> Callable[[RuleFunction], RuleFunction]:
    """Register a policy rule; its docstring becomes its `explain` text."""

    def register(function: RuleFunction) -> RuleFunction:
        source = function.__code__.co_filename  # the topic module, not this one
        document_rule(rule_id, "policy", function.__doc__ or rule_id, source=source)
        POLICY.append(Rule(rule_id, function, scope))
        return function

    return register


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    close = closest(name, known)
    return f"did you mean '{close}'?" if close else None


def pools_by_cluster(p: Platform) -> dict[str, list[Pool]]:
    """The pools of each cluster, in name order: rules that compare a cluster's pools."""
    by_cluster: dict[str, list[Pool]] = defaultdict(list)
    for pool in p.pools.values():
        by_cluster[pool.cluster].append(pool)
    return by_cluster


def error(
    rule_id: str,
    message: str,
    at: Location,
    hint: str | None = None,
    notes: tuple[tuple[str, Location], ...] = (),
) -> Diagnostic:
    return Diagnostic(rule_id, message, at, notes=notes, hint=hint)
