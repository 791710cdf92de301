"""The audit log setting of a managed control plane: control (8) where the provider runs the API
server.

Design: docs/audit-policy.md#how-the-audit-log-setting-is-built-per-provider
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from renderer.layers.security import audit
from renderer.model.choices import Provider
from renderer.model.platform import Cluster
from renderer.model.view import ClusterView
from renderer.output.manifest import Output, Values

LAYER = audit.LAYER
FOLDER = audit.FOLDER
FILE = "audit-logging"

EKS_LOG_TYPES = ("audit", "authenticator")
"""EKS control plane log types (`LogSetup.types`): the API server's audit log, and the IAM
authenticator's, which says which IAM principal each Kubernetes user is."""

GKE_SERVICE = "container.googleapis.com"
"""The Kubernetes Engine API: the service whose Data Access audit config covers the cluster's
Kubernetes API requests."""
GKE_LOG_TYPES = ("DATA_READ", "DATA_WRITE")
"""`AuditLogConfig.LogType` values: reads of data (such as a pod's logs) and writes of data
(such as a pod's status); writes of metadata and configuration are Admin Activity, always on.
`ADMIN_READ` (reading metadata, such as listing pods: every controller's watches) is left off for
its volume."""

AKS_API_VERSION = "2021-05-01-preview"
AKS_SETTING_TYPE = "Microsoft.Insights/diagnosticSettings"
AKS_SETTING_NAME = "gpuplane-audit"
AKS_CATEGORIES = ("kube-audit", "guard")
"""AKS resource log categories: the API server's whole audit log (`kube-audit`; get and list
too, so who read which secret), and Entra ID / Azure RBAC authorization (`guard`)."""
AKS_DESTINATION_TYPE = "Dedicated"
"""Resource-specific Log Analytics tables (AKSAudit) instead of the shared AzureDiagnostics."""

NOT_APPLIED = (
    "Not applied to the cluster: no kustomization lists this file. Give it to whoever "
    "provisions the cluster (docs/audit-policy.md says how)."
)


def render(view: ClusterView) -> Iterator[Output]:
    """The audit log setting of a cluster whose provider runs the API server and has one."""
    cluster = view.cluster
    if cluster.provider not in PROVIDERS:
        return
    yield Values(
        layer=LAYER,
        chart=FILE,
        body=audit_logging(cluster),
        source=cluster.origin.at("spec", "provider"),
        folder=FOLDER,
    )


def audit_logging(cluster: Cluster) -> dict[str, Any]:
    """The whole document: what every provider's file says, then the provider's own section."""
    body: dict[str, Any] = {
        "description": (
            f"Audit log setting of cluster {cluster.name} (provider {cluster.provider}): the "
            "provider runs the API server with its own audit policy, and this setting decides "
            "what of its audit log the provider keeps. " + NOT_APPLIED
        ),
        "cluster": cluster.name,
        "provider": cluster.provider,
    }
    body.update(PROVIDERS[cluster.provider]())
    return body


# --- providers --------------------------------------------------------------------------------


def _eks() -> dict[str, Any]:
    return {
        "eks": {
            "description": (
                "Amazon EKS API request UpdateClusterConfig (CreateCluster takes the same "
                "`logging`): add `name`, the EKS cluster's name. With the AWS CLI: aws eks "
                "update-cluster-config --name NAME --logging '<logging as JSON>'. Log types not "
                "listed keep their setting. The log goes to CloudWatch Logs, log group "
                "/aws/eks/NAME/cluster; set its retention there."
            ),
            "updateClusterConfig": {
                "logging": {"clusterLogging": [{"types": list(EKS_LOG_TYPES), "enabled": True}]}
            },
        }
    }


def _gke() -> dict[str, Any]:
    return {
        "gke": {
            "description": (
                "Cloud Audit Logs of the Kubernetes Engine API. Admin Activity audit logs "
                "(writes of metadata and configuration) are always on. This is the Data Access "
                "audit config: merge the "
                "auditConfigs entry into the project's IAM policy (gcloud projects "
                "get-iam-policy PROJECT --format=yaml > policy.yaml, add it, gcloud projects "
                "set-iam-policy PROJECT policy.yaml), or give the same to Terraform's "
                "google_project_iam_audit_config."
            ),
            "iamPolicy": {
                "auditConfigs": [
                    {
                        "service": GKE_SERVICE,
                        "auditLogConfigs": [{"logType": t} for t in GKE_LOG_TYPES],
                    }
                ]
            },
        }
    }


def _aks() -> dict[str, Any]:
    return {
        "aks": {
            "description": (
                "Azure Resource Manager resource: a diagnostic setting of the AKS cluster. Add "
                "`scope` (the managed cluster's resource ID) and properties.workspaceId (a Log "
                "Analytics workspace), or storageAccountId or eventHubAuthorizationRuleId. With "
                "the Azure CLI: az monitor diagnostic-settings create --name gpuplane-audit "
                "--resource CLUSTER_ID --workspace WORKSPACE_ID --export-to-resource-specific "
                "true --logs '<properties.logs as JSON>'. Retention is the workspace's."
            ),
            "diagnosticSetting": {
                "type": AKS_SETTING_TYPE,
                "apiVersion": AKS_API_VERSION,
                "name": AKS_SETTING_NAME,
                "properties": {
                    "logAnalyticsDestinationType": AKS_DESTINATION_TYPE,
                    "logs": [{"category": c, "enabled": True} for c in AKS_CATEGORIES],
                },
            },
        }
    }


PROVIDERS: Mapping[Provider, Callable[[], dict[str, Any]]] = {
    "eks": _eks,
    "gke": _gke,
    "aks": _aks,
}
"""The providers that run the API server and have an audit log setting to render."""


COREWEAVE_NOTE = (
    "CKS runs the API server with its own audit policy and keeps its audit log with no setting "
    "to turn on, so nothing is rendered for it: read the log on CoreWeave Grafana's Kubernetes "
    "Audit Logs dashboard, and forward Telemetry Relay's Audit Logs stream to keep it "
    "(CoreWeave docs: observability/managed-grafana/cks/kubernetes-audit-logs, "
    "observability/telemetry-forwarding/relay)."
)

WHAT_IT_TURNS_ON: Mapping[str, str] = {
    "eks": "the `audit` and `authenticator` control plane logs, to CloudWatch Logs",
    "gke": (
        "Data Access audit logs (`DATA_READ`, `DATA_WRITE`) of `container.googleapis.com`; "
        "Admin Activity audit logs are always on"
    ),
    "aks": ("a diagnostic setting sending `kube-audit` and `guard` to a Log Analytics workspace"),
}


SELF_MANAGED_NOTE = (
    f"The API server's audit policy is `{audit.FOLDER}/{audit.FILE}.yaml`, beside this file "
    "(docs/audit-policy.md says where it goes)."
)


def readme_note(provider: str) -> str:
    """What the cluster README says about control (8) on a cluster of this provider (every
    value of the schema's `provider` enum has one; tests/test_audit_logging.py checks)."""
    if provider in PROVIDERS:
        return (
            "The provider runs the API server with its own audit policy; its audit log setting "
            f"is `{FOLDER}/{FILE}.yaml`, beside this file: {WHAT_IT_TURNS_ON[provider]} "
            "(docs/audit-policy.md says where it goes)."
        )
    if provider == "coreweave":
        return COREWEAVE_NOTE
    if provider in audit.SELF_MANAGED:
        return SELF_MANAGED_NOTE
    return "gpuplane renders no audit setting for this provider (docs/audit-policy.md)."
