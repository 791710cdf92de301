"""The registry of rule ids: every finding names one, and `gpuplane explain RULE` prints its text."""

from __future__ import annotations

import inspect
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RuleDoc:
    """A rule's stable id, the pipeline stage that checks it, and why it exists."""

    id: str
    stage: str
    text: str

    @property
    def summary(self) -> str:
        return self.text.strip().splitlines()[0]


RULES: dict[str, RuleDoc] = {}


def document_rule(rule_id: str, stage: str, text: str) -> None:
    """Register a rule's explanation; ids are unique across the whole engine."""
    if rule_id in RULES:
        raise ValueError(f"rule id {rule_id!r} registered twice")
    RULES[rule_id] = RuleDoc(rule_id, stage, inspect.cleandoc(text))


def explain(rule_id: str) -> RuleDoc | None:
    """The rule's text; only rules whose modules were imported are known (the CLI imports them
    all, so the registry never imports the modules that document rules)."""
    return RULES.get(rule_id)


def all_rules() -> list[RuleDoc]:
    return sorted(RULES.values(), key=lambda r: (r.stage, r.id))
