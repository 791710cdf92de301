"""Which add-on's release pins the CRDs of each API group (`SCHEMA_OPERATORS`), and its title.

The schema store files a CRD under the add-on that installs its group and checks a cluster's
objects against the release that cluster pins (docs/schema-store.md). The groups below are the
upstream CRDs' own (../shared/crds, each folder one project's release files: SOURCES.md there
names the repository and tag), not gpuplane's table read back.
"""

from __future__ import annotations

import json

import pytest

from renderer.model import names
from renderer.model.names import OPERATOR_TITLES, SCHEMA_OPERATORS, schema_operator
from renderer.model.operators import (
    APPWRAPPER_ADDON,
    BY_ADDON,
    DRA_DRIVER_ADDON,
    JOBSET_ADDON,
    KEDA_ADDON,
    KUBERAY_ADDON,
    LWS_ADDON,
    NETWORK_OPERATOR_ADDON,
    OPERATORS,
    OPTIONAL_ADDONS,
    TRAINER_ADDON,
)
from renderer.pipeline import load_platform, schema_pins
from tests.conftest import REPO, SHARED_CRDS

PROJECT_ADDONS = {
    "jobset": JOBSET_ADDON,  # kubernetes-sigs/jobset v0.12.0
    "kuberay": KUBERAY_ADDON,  # ray-project/kuberay v1.7.0
    "kubeflow-trainer": TRAINER_ADDON,  # kubeflow/trainer v2.3.0
    "lws": LWS_ADDON,  # kubernetes-sigs/lws v0.10.0
    "appwrapper": APPWRAPPER_ADDON,  # project-codeflare/appwrapper
    "network-operator": NETWORK_OPERATOR_ADDON,  # Mellanox/network-operator v26.4.1
    "k8s-dra-driver-gpu": DRA_DRIVER_ADDON,  # NVIDIA/k8s-dra-driver-gpu v25.12.0
    "keda": KEDA_ADDON,  # kedacore/keda v2.20.2
}
"""The CRD folders of the operators gpuplane installs for workload kinds, fabrics and devices,
and the add-on key that installs each project's release."""

SHARED_GROUPS = {"k8s.cni.cncf.io"}
"""Groups a project ships but does not own: the Network Operator's chart carries Multus's
NetworkAttachmentDefinition CRD, which other CNIs install too; no one add-on pins it."""


@pytest.mark.skipif(not SHARED_CRDS.is_dir(), reason="../shared/crds is not beside this checkout")
def test_each_operator_crd_is_pinned_by_the_addon_that_installs_it() -> None:
    index = json.loads((SHARED_CRDS / "index.json").read_text())
    seen = set()
    for crd in index:
        folder = crd["file"].split("/")[0]
        addon = PROJECT_ADDONS.get(folder)
        if addon is None or crd["group"] in SHARED_GROUPS:
            continue
        seen.add(folder)
        assert schema_operator(crd["group"], crd["kind"]) == addon, crd["file"]
    assert seen == set(PROJECT_ADDONS), "a project's CRDs are missing from ../shared/crds"
    # the groups the brief named, spelled out: a typo in the table fails here too
    assert SCHEMA_OPERATORS["mellanox.com"] == "networkOperator"
    assert SCHEMA_OPERATORS["resource.nvidia.com"] == "draDriver"


def test_every_kind_an_operator_serves_is_pinned_by_that_operator() -> None:
    """The MPIJob is the one kind two operators define (the training operator's v1, the MPI
    Operator's v2beta1): the store files its schemas under the training operator's group."""
    for operator in OPERATORS:
        for api in operator.apis:
            if (api.group, api.kind) == ("kubeflow.org", "MPIJob"):
                assert schema_operator(api.group, api.kind) == "trainingOperator"
                continue
            assert schema_operator(api.group, api.kind) == operator.addon, f"{api.group} {api.kind}"


def test_the_optional_operators_are_titled_as_the_operator_table_titles_them() -> None:
    for addon in OPTIONAL_ADDONS:
        assert OPERATOR_TITLES[addon] == BY_ADDON[addon].title


def test_one_definition_of_each_addon_key() -> None:
    """operators.py re-exports names.py's keys: the very same objects, one meaning per name."""
    from renderer.model import operators

    for key in ("JOBSET_ADDON", "NETWORK_OPERATOR_ADDON", "DRA_DRIVER_ADDON", "OPENCOST_ADDON"):
        assert getattr(operators, key) is getattr(names, key)


def test_a_nic_cluster_policy_is_checked_against_the_network_operator_release_pinned() -> None:
    platform = load_platform(REPO).platform
    cluster = platform.clusters["prod-east"]
    pin = schema_pins(cluster)("mellanox.com", "NicClusterPolicy")
    assert (pin.operator, pin.release) == ("networkOperator", "26.4.1")
    assert pin.title == "NVIDIA Network Operator"
