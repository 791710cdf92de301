"""`tests.admission_cel.evaluate`, with each denial's message as the API server words it.

A validation with a `messageExpression` is answered with that expression's value, evaluated
with the same variables as the validation (Kubernetes' `Validation.messageExpression`: it "has
access to all the same variables as the expression except for 'authorizer'"); where it fails,
or gives a blank string or one with a line break, the API server falls back to `message`, and
so does this. `request.namespace` is the namespace's name, as the API server passes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from tests.admission_cel import compile_expression

ALICE = "oidc:alice@example.com"


def _value(expression: str, activation: Mapping[str, Any]) -> Any:
    try:
        return compile_expression(expression).evaluate(dict(activation))
    except CELEvalError as err:
        return err


def _message(validation: Mapping[str, Any], activation: Mapping[str, Any]) -> str:
    fallback = str(validation.get("message", validation["expression"]))
    if "messageExpression" not in validation:
        return fallback
    value = _value(validation["messageExpression"], activation)
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
        return fallback
    return str(value)


def evaluate(
    policy: Mapping[str, Any],
    obj: Mapping[str, Any] | None,
    *,
    old: Mapping[str, Any] | None = None,
    operation: str = "CREATE",
    username: str = ALICE,
    namespace: Mapping[str, Any] | None = None,
) -> list[str]:
    """The messages of the validations that deny this request (empty: admitted), in the
    policy's order: every matchCondition must be true (an error fails closed), variables are
    read as `variables.<name>`, a validation that is not true denies."""
    spec = policy["spec"]
    request: dict[str, Any] = {
        "operation": operation,
        "userInfo": {"username": username, "groups": []},
    }
    if namespace is not None:
        request["namespace"] = namespace["metadata"]["name"]
    activation: dict[str, Any] = {
        "object": json_to_cel(None if obj is None else dict(obj)),
        "oldObject": json_to_cel(None if old is None else dict(old)),
        "request": json_to_cel(request),
        "namespaceObject": json_to_cel(None if namespace is None else dict(namespace)),
    }
    for condition in spec.get("matchConditions", []):
        result = _value(condition["expression"], activation)
        if isinstance(result, CELEvalError):  # failurePolicy: Fail
            return [f"matchCondition {condition['name']} failed: {result}"]
        if not bool(result):
            return []
    variables: dict[celtypes.StringType, Any] = {}
    for variable in spec.get("variables", []):
        activation["variables"] = celtypes.MapType(variables)
        variables[celtypes.StringType(variable["name"])] = _value(
            variable["expression"], activation
        )
    activation["variables"] = celtypes.MapType(variables)
    denied = []
    for validation in spec["validations"]:
        result = _value(validation["expression"], activation)
        if isinstance(result, CELEvalError) or not bool(result):
            denied.append(_message(validation, activation))
    return denied
