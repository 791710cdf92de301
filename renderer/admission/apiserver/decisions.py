"""What an admission policy decided on a request: the shapes `policies.py` and `fixes.py`
share (`PolicyDecision` and its policy and binding in k8s.io/apiserver
`pkg/admission/plugin/policy/validating`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from renderer.admission.apiserver.celeval import Activation

Evaluation = Literal["deny", "error"]


@dataclass(frozen=True)
class Decision:
    """One validation that does not admit the request (`PolicyDecision` with ActionDeny)."""

    index: int
    """The validation's index in `spec.validations`; -1 for a matchConditions failure or a
    binding that could not be matched."""
    evaluation: Evaluation
    message: str
    reason: str
    """The status reason the refusal would carry: the validation's, else `Invalid`."""


@dataclass(frozen=True)
class PolicyResult:
    """What one policy gave on one request: its denials, and what fit could not evaluate."""

    decisions: tuple[Decision, ...] = ()
    notes: tuple[str, ...] = ()
    activation: Activation | None = None


def name_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


@dataclass(frozen=True)
class BindingResult:
    """One matching binding and the decisions of its policy on the request."""

    policy: Mapping[str, Any]
    binding: Mapping[str, Any]
    result: PolicyResult
    actions: tuple[str, ...]
    obj: Mapping[str, Any]
    """The object as the policy saw it."""

    @property
    def policy_name(self) -> str:
        return name_of(self.policy)

    @property
    def binding_name(self) -> str:
        return name_of(self.binding)
