"""Which Kubernetes versions each operator release supports, and which operator releases Kueue's
integrations support: the projects' own statements, each row with where it is written.

Two tables, read by the policy rule `operator-version-incompatible`:

- `KUBERNETES_SUPPORT`: per add-on key (`spec.addons`), release lines of the add-on and the
  Kubernetes minors each supports, as its project states them (README, installation page,
  platform-support page, or the chart's `kubeVersion`, which Helm enforces on install).
- `INTEGRATION_SUPPORT`: per Kueue release line, the operator releases each of its integrations
  supports, from Kueue's "Run ..." pages ("Before you begin").

An add-on release no row covers is not checked: gpuplane does not guess a range nobody states.
`UNSTATED` says, per add-on, why it has no row. A row's `source` names the repository, the tag
(or, where the project tags no docs, the commit) and the file the statement is in; the tests
read those files where the fetched mirrors are beside the checkout.

Versions are read as cluster files write them: `v0.19.2`, `0.12.0`, `26.4.1`, `2.0.4`, and the
DCGM exporter's `4.5.2-4.8.1` (its DCGM release counts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from packaging.version import InvalidVersion, Version

from renderer.model.names import (
    ARGO_WORKFLOWS_ADDON,
    DCGM_EXPORTER_ADDON,
    EXTERNAL_SECRETS_ADDON,
    GPU_OPERATOR_ADDON,
    KUEUE_ADDON,
    PROMETHEUS_ADDON,
    VOLCANO_ADDON,
)
from renderer.model.operators import (
    APPWRAPPER_ADDON,
    DRA_DRIVER_ADDON,
    ENVOY_GATEWAY_ADDON,
    JOBSET_ADDON,
    KEDA_ADDON,
    KUBERAY_ADDON,
    LWS_ADDON,
    MPI_OPERATOR_ADDON,
    NETWORK_OPERATOR_ADDON,
    OPENCOST_ADDON,
    TRAINER_ADDON,
    TRAINING_OPERATOR_ADDON,
)

_LEADING_RELEASE = re.compile(r"^[vV]?(\d+(?:\.\d+){0,2})")


def parse_release(text: str) -> Version | None:
    """A cluster file's version as a comparable release, None where it is none.

    `v0.19.2` and `0.19.2` are the same release; a pre-release (`26.4.1-rc.1`) sorts before its
    release. A version packaging cannot read is taken by its leading numbers: the DCGM
    exporter's `4.5.2-4.8.1` is DCGM 4.5.2, a `v1.0.0-devel` build is 1.0.0."""
    text = text.strip()
    try:
        return Version(text)
    except InvalidVersion:
        pass
    leading = _LEADING_RELEASE.match(text)
    return Version(leading.group(1)) if leading else None


def kubernetes_minor(text: str) -> Version | None:
    """A cluster's `spec.kubernetesVersion` (`"1.33"`, or `"1.33.4"`) as major.minor."""
    release = parse_release(text)
    if release is None or len(release.release) < 2:
        return None
    return Version(f"{release.release[0]}.{release.release[1]}")


@dataclass(frozen=True, slots=True)
class Source:
    """Where a project states a fact: repository, tag (or commit) and file, and the words."""

    repo: str
    ref: str
    path: str
    says: str

    def __str__(self) -> str:
        return f"{self.repo}@{self.ref}:{self.path}"


@dataclass(frozen=True, slots=True)
class Releases:
    """A line of releases: from `since` (included) to `before` (excluded); `pin` is its newest
    release that the statement was read at, written as cluster files write this add-on's
    version: the one a hint suggests."""

    since: str
    before: str
    pin: str

    def covers(self, release: Version) -> bool:
        since, before = Version(self.since), Version(self.before)
        # a pre-release of the line's first release (26.4.0-rc.1) belongs to the line
        return since <= Version(release.base_version) < before


@dataclass(frozen=True, slots=True)
class KubernetesSupport:
    """The Kubernetes minors a line of an add-on's releases supports (`maximum`: None where the
    project states no upper bound)."""

    releases: Releases
    minimum: str
    maximum: str | None
    source: Source
    reading: str = ""
    """How the range is read from the words, where they do not spell it out."""

    def supports(self, minor: Version) -> bool:
        if minor < Version(self.minimum):
            return False
        return self.maximum is None or minor <= Version(self.maximum)

    @property
    def span(self) -> str:
        """The supported minors in words: `1.34 or newer`, `1.31 to 1.35`."""
        if self.maximum is None:
            return f"{self.minimum} or newer"
        if self.maximum == self.minimum:
            return f"{self.minimum} only"
        return f"{self.minimum} to {self.maximum}"


@dataclass(frozen=True, slots=True)
class IntegrationSupport:
    """The releases of an operator that a line of Kueue's releases supports for one
    integration (`maximum`: None where Kueue states no upper bound)."""

    kueue: Releases
    framework: str
    addon: str
    minimum: str
    maximum: str | None
    source: Source

    def supports(self, release: Version) -> bool:
        if Version(release.base_version) < Version(self.minimum):
            return False
        return self.maximum is None or release <= Version(self.maximum)

    @property
    def span(self) -> str:
        if self.maximum is None:
            return f"{self.minimum} or newer"
        return f"{self.minimum} to {self.maximum}"


# --- the statements ----------------------------------------------------------------------------
# `says` is the statement's words exactly as the file writes them (tests/test_operator_versions.py
# finds them there where the fetched mirrors are beside the checkout).

_KUEUE = "Requires Kubernetes 1.29 or newer"
_JOBSET = "Requires a Kubernetes cluster running one of the last 3 Kubernetes minor versions."
_JOBSET_READING = "the last 3 minors when {} was tagged ({}): {}"
# JobSet's statement is relative. The newest Kubernetes minor on a JobSet tag's date is the
# newest k8s.io/api v0.X.0 tagged before it (kubernetes/api: v0.34.0 2025-08-27, v0.35.0
# 2025-12-17, v0.36.0 2026-04-22); JobSet v0.12.0 also builds against k8s.io/api v0.36.0 (its
# go.mod). No upper bound is stated: the words do not say a release stops working on a minor
# that came out after it.
_KUBERAY = "Make sure your Kubernetes cluster and Kubectl are both at version at least 1.23."
_NETWORK_DOCS = "docs/platform-support.rst"
_GPU_OPERATOR_DOCS = "gpu-operator/platform-support.rst"
# The GPU Operator's ranges depend on the node OS (v26.7: Ubuntu 24.04 1.32---1.36, every other
# OS 1.33---1.36). gpuplane does not know the node OS, so a row spans the widest: a finding means
# no OS the page lists supports the cluster's Kubernetes.
_VOLCANO = "Kubernetes compatibility"
# Volcano's README table marks each Kubernetes minor a Volcano line is "exactly compatible" with
# (a tick); a row spans the ticked minors of its line, in the README at v1.15.1.


def _jobset(line: Releases, tag: str, day: str, minors: str) -> KubernetesSupport:
    return KubernetesSupport(
        line,
        minors.split()[0],
        None,
        Source("kubernetes-sigs/jobset", tag, "README.md", _JOBSET),
        _JOBSET_READING.format(tag, day, ", ".join(minors.split())),
    )


def _volcano(line: Releases, minimum: str, maximum: str) -> KubernetesSupport:
    label = ".".join(line.since.split(".")[:2])
    return KubernetesSupport(
        line,
        minimum,
        maximum,
        Source("volcano-sh/volcano", "v1.15.1", "README.md", _VOLCANO),
        f"its row 'Volcano v{label}' marks Kubernetes {minimum} to {maximum} exactly compatible",
    )


_KEDA_DOCS = "content/docs/{}/operate/cluster.md"
_ENVOY_MATRIX = "site/content/en/news/releases/matrix.md"

KUBERNETES_SUPPORT: Mapping[str, tuple[KubernetesSupport, ...]] = MappingProxyType(
    {
        KUEUE_ADDON: (
            KubernetesSupport(
                Releases("0.19.0", "0.20.0", "v0.19.2"),
                "1.29",
                None,
                Source("kubernetes-sigs/kueue", "v0.19.2", "README.md", _KUEUE),
            ),
            KubernetesSupport(
                Releases("0.18.0", "0.19.0", "v0.18.6"),
                "1.29",
                None,
                Source("kubernetes-sigs/kueue", "v0.18.6", "README.md", _KUEUE),
            ),
        ),
        JOBSET_ADDON: (
            _jobset(
                Releases("0.12.0", "0.13.0", "0.12.0"), "v0.12.0", "2026-05-08", "1.34 1.35 1.36"
            ),
            _jobset(
                Releases("0.11.0", "0.12.0", "0.11.1"), "v0.11.1", "2026-02-26", "1.33 1.34 1.35"
            ),
            _jobset(
                Releases("0.10.0", "0.11.0", "0.10.1"), "v0.10.1", "2025-09-29", "1.32 1.33 1.34"
            ),
            _jobset(Releases("0.9.0", "0.10.0", "0.9.1"), "v0.9.1", "2025-09-20", "1.32 1.33 1.34"),
        ),
        KUBERAY_ADDON: (
            # the same words at v1.5.0, v1.6.0, v1.6.2 and v1.7.0
            KubernetesSupport(
                Releases("1.5.0", "1.8.0", "1.7.0"),
                "1.23",
                None,
                Source("ray-project/kuberay", "v1.7.0", "docs/deploy/installation.md", _KUBERAY),
            ),
        ),
        TRAINER_ADDON: (
            # the page is in the repository from v2.3.0; earlier releases' pages are on the
            # (unversioned) kubeflow.org site only
            KubernetesSupport(
                Releases("2.3.0", "2.4.0", "2.3.0"),
                "1.31",
                None,
                Source(
                    "kubeflow/trainer",
                    "v2.3.0",
                    "docs/operator-guides/installation.md",
                    "Kubernetes >= 1.31",
                ),
            ),
        ),
        LWS_ADDON: (
            # the same words at v0.8.0, v0.9.0 and v0.10.0
            KubernetesSupport(
                Releases("0.8.0", "0.11.0", "0.10.0"),
                "1.26",
                None,
                Source(
                    "kubernetes-sigs/lws",
                    "v0.10.0",
                    "site/content/en/docs/installation/_index.md",
                    "A Kubernetes cluster with version >= 1.26 is **Required**",
                ),
            ),
        ),
        NETWORK_OPERATOR_ADDON: (
            # The docs repository tags no 26.4 release: its main branch at 0c0ecad (2026-05-21)
            # documents v26.4.0-beta.9, the 26.4 line. (The chart's own kubeVersion, '>= 1.21.0-0'
            # at v26.4.1, is looser.)
            KubernetesSupport(
                Releases("26.4.0", "26.5.0", "26.4.1"),
                "1.31",
                "1.35",
                Source(
                    "Mellanox/network-operator-docs", "0c0ecad", _NETWORK_DOCS, ">=1.31 and <=1.35"
                ),
            ),
            KubernetesSupport(
                Releases("26.1.0", "26.2.0", "26.1.1"),
                "1.31",
                "1.35",
                Source(
                    "Mellanox/network-operator-docs", "v26.1.1", _NETWORK_DOCS, ">=1.31 and <=1.35"
                ),
            ),
            KubernetesSupport(
                Releases("25.10.0", "25.11.0", "25.10.0"),
                "1.30",
                "1.34",
                Source(
                    "Mellanox/network-operator-docs", "v25.10.0", _NETWORK_DOCS, ">=1.30 and <=1.34"
                ),
            ),
        ),
        DRA_DRIVER_ADDON: (
            # and the chart's kubeVersion, ">=1.32.0-0", at both tags
            KubernetesSupport(
                Releases("25.12.0", "25.13.0", "25.12.0"),
                "1.32",
                None,
                Source(
                    "NVIDIA/k8s-dra-driver-gpu",
                    "v25.12.0",
                    "README.md",
                    "For Kubernetes 1.32 or newer",
                ),
            ),
            KubernetesSupport(
                Releases("25.8.0", "25.9.0", "25.8.1"),
                "1.32",
                None,
                Source(
                    "NVIDIA/k8s-dra-driver-gpu",
                    "v25.8.1",
                    "README.md",
                    "For Kubernetes 1.32 or newer",
                ),
            ),
        ),
        KEDA_ADDON: (
            # The keda-docs repository tags nothing: its main branch at a55c5d3 (2026-08-20)
            # keeps one folder per release line; the "tested" matrix is the same on every
            # line's page. (The chart's own kubeVersion, ">=v1.23.0-0" at v2.20.2, is looser.)
            KubernetesSupport(
                Releases("2.20.0", "2.21.0", "2.20.2"),
                "1.33",
                "1.35",
                Source(
                    "kedacore/keda-docs",
                    "a55c5d3",
                    _KEDA_DOCS.format("2.20"),
                    "| v2.20 | v1.33 - v1.35 |",
                ),
            ),
            KubernetesSupport(
                Releases("2.19.0", "2.20.0", "2.19.0"),
                "1.32",
                "1.34",
                Source(
                    "kedacore/keda-docs",
                    "a55c5d3",
                    _KEDA_DOCS.format("2.19"),
                    "| v2.19 | v1.32 - v1.34 |",
                ),
            ),
        ),
        ENVOY_GATEWAY_ADDON: (
            # the compatibility matrix at the tag; the chart (charts/gateway-helm) states no
            # kubeVersion
            KubernetesSupport(
                Releases("1.9.0", "1.10.0", "v1.9.0"),
                "1.33",
                "1.36",
                Source(
                    "envoyproxy/gateway",
                    "v1.9.0",
                    _ENVOY_MATRIX,
                    "| v1.9                  | **distroless-v1.39.0**      | **17b1956c**       "
                    "| **v1.6.1**          | v1.33, v1.34, v1.35, v1.36 |",
                ),
            ),
            KubernetesSupport(
                Releases("1.8.0", "1.9.0", "v1.8.3"),
                "1.32",
                "1.35",
                Source(
                    "envoyproxy/gateway",
                    "v1.9.0",
                    _ENVOY_MATRIX,
                    "| v1.8                  | **distroless-v1.38.0**      | **fe26676d**       "
                    "| **v1.5.1**          | v1.32, v1.33, v1.34, v1.35 |",
                ),
            ),
        ),
        OPENCOST_ADDON: (
            # The chart (opencost/opencost-helm-chart, Chart.yaml at opencost-2.5.17) has no
            # kubeVersion; the project's installation page (unversioned) states one.
            KubernetesSupport(
                Releases("2.5.0", "2.6.0", "2.5.17"),
                "1.21",
                None,
                Source(
                    "opencost/opencost-website",
                    "6bdcb9e",
                    "docs/installation/install.mdx",
                    "Users should be running Kubernetes 1.21+",
                ),
            ),
        ),
        GPU_OPERATOR_ADDON: (
            KubernetesSupport(
                Releases("26.7.0", "26.8.0", "v26.7.0"),
                "1.32",
                "1.36",
                Source(
                    "NVIDIA/cloud-native-docs",
                    "gpu-operator-v26.7-1",
                    _GPU_OPERATOR_DOCS,
                    "1.32---1.36",
                ),
                "the widest range of any operating system the page lists",
            ),
            KubernetesSupport(
                Releases("26.3.0", "26.4.0", "v26.3.3"),
                "1.32",
                "1.35",
                Source(
                    "NVIDIA/cloud-native-docs",
                    "gpu-operator-v26.3-9",
                    _GPU_OPERATOR_DOCS,
                    "1.32---1.35",
                ),
                "the widest range of any operating system the page lists",
            ),
        ),
        VOLCANO_ADDON: (
            _volcano(Releases("1.15.0", "1.16.0", "v1.15.1"), "1.23", "1.35"),
            _volcano(Releases("1.14.0", "1.15.0", "v1.14.4"), "1.23", "1.34"),
            _volcano(Releases("1.13.0", "1.14.0", "v1.13.3"), "1.23", "1.33"),
        ),
        PROMETHEUS_ADDON: (
            # the same kubeVersion on every 79.x tag
            KubernetesSupport(
                Releases("79.0.0", "80.0.0", "79.6.1"),
                "1.25",
                None,
                Source(
                    "prometheus-community/helm-charts",
                    "kube-prometheus-stack-79.6.1",
                    "charts/kube-prometheus-stack/Chart.yaml",
                    'kubeVersion: ">=1.25.0-0"',
                ),
            ),
        ),
        EXTERNAL_SECRETS_ADDON: (
            # Not docs/introduction/stability-support.md's "Kubernetes Version" column (2.9:
            # "1.36"): hack/api-docs/add_eso_version.sh writes it from go.mod's k8s.io/client-go,
            # and the release's own e2e runs on kindest/node v1.33.4 (.github/workflows/e2e.yml).
            KubernetesSupport(
                Releases("2.9.0", "2.10.0", "2.9.0"),
                "1.19",
                None,
                Source(
                    "external-secrets/external-secrets",
                    "helm-chart-2.9.0",
                    "deploy/charts/external-secrets/Chart.yaml",
                    'kubeVersion: ">= 1.19.0-0"',
                ),
            ),
        ),
    }
)
"""Per add-on key, its release lines and the Kubernetes minors each supports."""

UNSTATED: Mapping[str, str] = MappingProxyType(
    {
        APPWRAPPER_ADDON: (
            "project-codeflare/appwrapper at v1.2.1 (README.md, site/_pages/quick-start.md, "
            "dev-setup.md) names no Kubernetes version"
        ),
        ARGO_WORKFLOWS_ADDON: (
            "argoproj/argo-workflows at v4.1.2 (docs/releases.md, tested-kubernetes-versions.md) "
            "lists the versions it is tested on (1.34.9 and 1.36.2) and says others may work: a "
            "test matrix, not a supported range"
        ),
        DCGM_EXPORTER_ADDON: "runs inside the GPU Operator, whose row covers it",
        TRAINING_OPERATOR_ADDON: (
            "kubeflow/trainer at v1.9.4 (README.md, Version Matrix) stops at v1.8.x (1.27+); its "
            "`latest (master HEAD)` row is the branch's, not a statement about a v1.9 release"
        ),
        MPI_OPERATOR_ADDON: (
            "kubeflow/mpi-operator at v0.8.0 (README.md) names no Kubernetes version it supports "
            "(only that kubectl has had kustomize since 1.14)"
        ),
    }
)
"""The add-ons with no row, and why: no check is made for them."""

_KUEUE_RAY = "Make sure you are using Kueue v0.6.0 version or newer and KubeRay {} or newer."
_KUEUE_TRAINER = "The minimum required Trainer version is v2.0.0."
_KUEUE_APPWRAPPER = "make sure you are using Kueue v0.11.0 version or newer and AppWrapper v1.1.1"
_RUN = "site/content/en/docs/tasks/run/{}.md"


def _kueue_line(line: Releases, tag: str) -> tuple[IntegrationSupport, ...]:
    """What one Kueue release line's "Run ..." pages require of each operator (the same words
    at v0.18.6 and v0.19.2). The JobSet and LeaderWorkerSet pages name no version of them; the
    MultiKueue pages' recommendations (JobSet v0.6.0, KubeRay v1.3.1) apply to MultiKueue only,
    which gpuplane does not set up."""
    return (
        IntegrationSupport(
            line,
            "ray.io/rayjob",
            KUBERAY_ADDON,
            "1.1.0",
            None,
            Source(
                "kubernetes-sigs/kueue", tag, _RUN.format("rayjobs"), _KUEUE_RAY.format("v1.1.0")
            ),
        ),
        IntegrationSupport(
            line,
            "ray.io/raycluster",
            KUBERAY_ADDON,
            "1.1.0",
            None,
            Source(
                "kubernetes-sigs/kueue",
                tag,
                _RUN.format("rayclusters"),
                _KUEUE_RAY.format("v1.1.0"),
            ),
        ),
        IntegrationSupport(
            line,
            "ray.io/rayservice",
            KUBERAY_ADDON,
            "1.3.0",
            None,
            Source(
                "kubernetes-sigs/kueue",
                tag,
                _RUN.format("rayservices"),
                _KUEUE_RAY.format("v1.3.0"),
            ),
        ),
        IntegrationSupport(
            line,
            "trainer.kubeflow.org/trainjob",
            TRAINER_ADDON,
            "2.0.0",
            None,
            Source("kubernetes-sigs/kueue", tag, _RUN.format("trainjobs"), _KUEUE_TRAINER),
        ),
        IntegrationSupport(
            line,
            "workload.codeflare.dev/appwrapper",
            APPWRAPPER_ADDON,
            "v1.1.1",
            None,
            Source("kubernetes-sigs/kueue", tag, _RUN.format("appwrappers"), _KUEUE_APPWRAPPER),
        ),
    )


INTEGRATION_SUPPORT: tuple[IntegrationSupport, ...] = (
    *_kueue_line(Releases("0.19.0", "0.20.0", "v0.19.2"), "v0.19.2"),
    *_kueue_line(Releases("0.18.0", "0.19.0", "v0.18.6"), "v0.18.6"),
)
"""Per Kueue release line and integration, the operator releases it supports."""

KUEUE_BUILDS_AGAINST: Mapping[str, str] = MappingProxyType(
    {
        JOBSET_ADDON: "0.12.0",
        KUBERAY_ADDON: "1.6.2",
        TRAINER_ADDON: "2.2.1",
        LWS_ADDON: "0.9.0",
        APPWRAPPER_ADDON: "v1.2.2",
    }
)
"""The operator libraries Kueue v0.19.2 is built against (kubernetes-sigs/kueue@v0.19.2:go.mod).
For reference only: a library version is not a statement of which releases Kueue supports, and
no rule reads it."""


def kubernetes_support(addon: str, version: str) -> KubernetesSupport | None:
    """The row covering this release of the add-on; None where no project statement does."""
    release = parse_release(version)
    if release is None:
        return None
    for row in KUBERNETES_SUPPORT.get(addon, ()):
        if row.releases.covers(release):
            return row
    return None


def releases_supporting(addon: str, minor: Version) -> tuple[KubernetesSupport, ...]:
    """The add-on's release lines that support this Kubernetes minor, newest first."""
    rows = KUBERNETES_SUPPORT.get(addon, ())
    found = [row for row in rows if row.supports(minor)]
    return tuple(sorted(found, key=lambda r: Version(r.releases.since), reverse=True))


def integration_support(kueue_version: str, framework: str) -> IntegrationSupport | None:
    """What this Kueue release states of the operator behind one integration; None where it
    states nothing (or the Kueue release is one no row covers)."""
    release = parse_release(kueue_version)
    if release is None:
        return None
    for row in INTEGRATION_SUPPORT:
        if row.framework == framework and row.kueue.covers(release):
            return row
    return None
