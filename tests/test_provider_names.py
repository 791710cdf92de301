"""The names a managed provider keeps on its clusters, and the values gpuplane writes for "no
team": where they come from, and that they hold where they should and nowhere else.

Provider namespaces, from each provider's documentation (renderer/model/reserved.py cites the
page beside each): EKS's GuardDuty agent runs in `amazon-guardduty`, its CloudWatch
Observability add-on in `amazon-cloudwatch`, Fargate's log router reads `aws-observability`;
GKE's Managed Service for Prometheus uses `gmp-system` and `gmp-public`; AKS's run command uses
`aks-command`; CoreWeave's CKS keeps its control plane in `cw-*` namespaces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from renderer.findings.rules import explain
from renderer.layers.observability import alerts, recording
from renderer.model import metrics
from renderer.model.names import SUITE_COST_CENTER
from renderer.model.reserved import (
    PROVIDER_NAMESPACES,
    PROVIDER_PREFIXES,
    namespace_owner,
    platform_namespaces,
    sentinel_owner,
)
from renderer.pipeline import load_platform
from tests.red_team.harness import Attempt, errors

DOCUMENTED = {
    "eks": ("amazon-guardduty", "amazon-cloudwatch", "aws-observability"),
    "gke": ("gmp-system", "gmp-public", "config-management-system"),
    "aks": ("aks-command", "aks-istio-system", "app-routing-system"),
}


def provider_platform(tmp_path: Path, provider: str) -> Attempt:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit("clusters/staging-west.yaml", "provider: eks", f"provider: {provider}")
    return attempt


@pytest.mark.parametrize("provider", ["eks", "gke", "aks", "coreweave"])
def test_a_providers_names_are_reserved_on_its_clusters_only(tmp_path: Path, provider: str) -> None:
    platform = load_platform(provider_platform(tmp_path, provider).root).platform
    west, east = platform.clusters["staging-west"], platform.clusters["prod-east"]
    assert (west.provider, east.provider) == (provider, "on-prem")
    for name in DOCUMENTED.get(provider, ()):
        assert name in platform_namespaces(platform, west), name
        assert namespace_owner(platform, east, name) is None, name
    for prefix in PROVIDER_PREFIXES[provider]:
        assert namespace_owner(platform, west, f"{prefix}anything") is not None
        assert namespace_owner(platform, east, f"{prefix}anything") is None


def test_each_owner_names_its_provider() -> None:
    """The finding says whose agent it is: "... (EKS)", as the issue's example has it."""
    for provider, names in PROVIDER_NAMESPACES.items():
        for name, owner in names.items():
            assert owner.endswith(f"({provider.upper()})"), (name, owner)


def test_the_providers_named_are_the_schemas_managed_ones() -> None:
    schema = Path("schemas/cluster.schema.json").read_text()
    for provider in PROVIDER_PREFIXES:
        assert f'"{provider}"' in schema
    assert set(PROVIDER_NAMESPACES) == set(PROVIDER_PREFIXES)


def test_the_rule_explains_the_provider_names() -> None:
    doc = explain("reserved-namespace")
    assert doc is not None
    text = " ".join(f"{doc.summary} {doc.why} {doc.fix}".split())
    for names in PROVIDER_NAMESPACES.values():
        for name in names:
            assert f"`{name}`" in text, name
    for prefixes in PROVIDER_PREFIXES.values():
        for prefix in prefixes:
            assert f"`{prefix}*`" in text, prefix


def test_no_example_team_takes_a_provider_name(tmp_path: Path) -> None:
    for provider in PROVIDER_PREFIXES:
        attempt = provider_platform(tmp_path / provider, provider)
        assert not errors(attempt.findings(), "reserved-namespace"), provider


# --- sentinels ----------------------------------------------------------------------------------


def test_the_sentinel_is_what_the_rules_really_write() -> None:
    """Read from the rendered PromQL, not from the constant: the value a namespace without a
    team gets, and the one a free GPU's alert gets."""
    assert f'"{metrics.TEAM}", "platform", "' in recording._namespace_info()
    assert f'"{metrics.COST_CENTER}", "platform", "' in recording._namespace_info()
    assert f'"{metrics.TEAM}", "platform", "", "")' in alerts.gpu_team(str, "DCGM_FI_DEV_XID")
    assert SUITE_COST_CENTER == "platform"
    assert sentinel_owner("platform") is not None
    assert sentinel_owner("Platform") is not None
    assert sentinel_owner("p1atform") is not None  # reads as platform: 1 draws like l
    assert sentinel_owner("platforms") is None
    assert sentinel_owner("CC-1042") is None


def test_the_sentinel_rule_is_documented() -> None:
    doc = explain("sentinel-value")
    assert doc is not None
    assert "`metadata.name`" in doc.fix and "`spec.costCenter`" in doc.fix
