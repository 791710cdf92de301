"""The Go types of the fields whose OpenAPI schema does not name them: where a field of a built-in
kind is a named string, map or slice type (`v1.RestartPolicy`, `v1.ResourceList`,
`[]v1.Capability`, `types.UID`), the API server's decoding error names that type, and the
OpenAPI document says only `string` or `object`.

Read from the Go source of k8s.io/api v0.36.0 (`<group>/<version>/types.go` and the other
files of each package) and of k8s.io/apimachinery v0.36.0 `pkg/apis/meta/v1`: every struct
field with a JSON name whose type, written as Go's `reflect.Type.String()` prints it (pointers
dropped: the decoder reports the type it allocates), differs from the type its OpenAPI schema
in kubernetes-validate's v1.36 definitions implies (`[]byte` as reflect writes it, `[]uint8`,
is what OpenAPI's `format: byte` implies already). `tests/test_apiserver_gates.py` checks that
every field named here is a property of its definition. Named types change rarely between
releases; a field missing here is named by its OpenAPI type (`string`), the Go type of most.
"""

from __future__ import annotations

from collections.abc import Mapping

FIELD_TYPES: Mapping[str, Mapping[str, str]] = {
    "io.k8s.api.admissionregistration.v1.MatchResources": {"matchPolicy": "v1.MatchPolicyType"},
    "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicySpec": {
        "failurePolicy": "v1.FailurePolicyType",
        "reinvocationPolicy": "v1.ReinvocationPolicyType",
    },
    "io.k8s.api.admissionregistration.v1.MutatingWebhook": {
        "failurePolicy": "v1.FailurePolicyType",
        "matchPolicy": "v1.MatchPolicyType",
        "reinvocationPolicy": "v1.ReinvocationPolicyType",
        "sideEffects": "v1.SideEffectClass",
    },
    "io.k8s.api.admissionregistration.v1.Mutation": {"patchType": "v1.PatchType"},
    "io.k8s.api.admissionregistration.v1.ParamRef": {
        "parameterNotFoundAction": "v1.ParameterNotFoundActionType"
    },
    "io.k8s.api.admissionregistration.v1.RuleWithOperations": {"operations": "[]v1.OperationType"},
    "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec": {
        "validationActions": "[]v1.ValidationAction"
    },
    "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec": {
        "failurePolicy": "v1.FailurePolicyType"
    },
    "io.k8s.api.admissionregistration.v1.ValidatingWebhook": {
        "failurePolicy": "v1.FailurePolicyType",
        "matchPolicy": "v1.MatchPolicyType",
        "sideEffects": "v1.SideEffectClass",
    },
    "io.k8s.api.admissionregistration.v1.Validation": {"reason": "v1.StatusReason"},
    "io.k8s.api.admissionregistration.v1alpha1.MatchResources": {
        "matchPolicy": "v1alpha1.MatchPolicyType"
    },
    "io.k8s.api.admissionregistration.v1alpha1.MutatingAdmissionPolicySpec": {
        "failurePolicy": "v1alpha1.FailurePolicyType",
        "reinvocationPolicy": "v1alpha1.ReinvocationPolicyType",
    },
    "io.k8s.api.admissionregistration.v1alpha1.Mutation": {"patchType": "v1alpha1.PatchType"},
    "io.k8s.api.admissionregistration.v1alpha1.ParamRef": {
        "parameterNotFoundAction": "v1alpha1.ParameterNotFoundActionType"
    },
    "io.k8s.api.admissionregistration.v1beta1.MatchResources": {
        "matchPolicy": "v1beta1.MatchPolicyType"
    },
    "io.k8s.api.admissionregistration.v1beta1.MutatingAdmissionPolicySpec": {
        "failurePolicy": "v1beta1.FailurePolicyType",
        "reinvocationPolicy": "v1beta1.ReinvocationPolicyType",
    },
    "io.k8s.api.admissionregistration.v1beta1.Mutation": {"patchType": "v1beta1.PatchType"},
    "io.k8s.api.admissionregistration.v1beta1.ParamRef": {
        "parameterNotFoundAction": "v1beta1.ParameterNotFoundActionType"
    },
    "io.k8s.api.apiserverinternal.v1alpha1.StorageVersionCondition": {
        "status": "v1alpha1.ConditionStatus",
        "type": "v1alpha1.StorageVersionConditionType",
    },
    "io.k8s.api.apps.v1.DaemonSetCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.DaemonSetConditionType",
    },
    "io.k8s.api.apps.v1.DaemonSetUpdateStrategy": {"type": "v1.DaemonSetUpdateStrategyType"},
    "io.k8s.api.apps.v1.DeploymentCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.DeploymentConditionType",
    },
    "io.k8s.api.apps.v1.DeploymentStrategy": {"type": "v1.DeploymentStrategyType"},
    "io.k8s.api.apps.v1.ReplicaSetCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.ReplicaSetConditionType",
    },
    "io.k8s.api.apps.v1.StatefulSetCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.StatefulSetConditionType",
    },
    "io.k8s.api.apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy": {
        "whenDeleted": "v1.PersistentVolumeClaimRetentionPolicyType",
        "whenScaled": "v1.PersistentVolumeClaimRetentionPolicyType",
    },
    "io.k8s.api.apps.v1.StatefulSetSpec": {"podManagementPolicy": "v1.PodManagementPolicyType"},
    "io.k8s.api.apps.v1.StatefulSetUpdateStrategy": {"type": "v1.StatefulSetUpdateStrategyType"},
    "io.k8s.api.authentication.v1.BoundObjectReference": {"uid": "types.UID"},
    "io.k8s.api.authentication.v1.UserInfo": {"extra": "map[string]v1.ExtraValue"},
    "io.k8s.api.authorization.v1.SubjectAccessReviewSpec": {"extra": "map[string]v1.ExtraValue"},
    "io.k8s.api.autoscaling.v2.ContainerResourceMetricSource": {"name": "v1.ResourceName"},
    "io.k8s.api.autoscaling.v2.ContainerResourceMetricStatus": {"name": "v1.ResourceName"},
    "io.k8s.api.autoscaling.v2.HPAScalingPolicy": {"type": "v2.HPAScalingPolicyType"},
    "io.k8s.api.autoscaling.v2.HPAScalingRules": {"selectPolicy": "v2.ScalingPolicySelect"},
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerCondition": {
        "status": "v1.ConditionStatus",
        "type": "v2.HorizontalPodAutoscalerConditionType",
    },
    "io.k8s.api.autoscaling.v2.MetricSpec": {"type": "v2.MetricSourceType"},
    "io.k8s.api.autoscaling.v2.MetricStatus": {"type": "v2.MetricSourceType"},
    "io.k8s.api.autoscaling.v2.MetricTarget": {"type": "v2.MetricTargetType"},
    "io.k8s.api.autoscaling.v2.ResourceMetricSource": {"name": "v1.ResourceName"},
    "io.k8s.api.autoscaling.v2.ResourceMetricStatus": {"name": "v1.ResourceName"},
    "io.k8s.api.batch.v1.CronJobSpec": {"concurrencyPolicy": "v1.ConcurrencyPolicy"},
    "io.k8s.api.batch.v1.JobCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.JobConditionType",
    },
    "io.k8s.api.batch.v1.JobSpec": {
        "completionMode": "v1.CompletionMode",
        "podReplacementPolicy": "v1.PodReplacementPolicy",
    },
    "io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement": {
        "operator": "v1.PodFailurePolicyOnExitCodesOperator"
    },
    "io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern": {
        "status": "v1.ConditionStatus",
        "type": "v1.PodConditionType",
    },
    "io.k8s.api.batch.v1.PodFailurePolicyRule": {"action": "v1.PodFailurePolicyAction"},
    "io.k8s.api.batch.v1.UncountedTerminatedPods": {
        "failed": "[]types.UID",
        "succeeded": "[]types.UID",
    },
    "io.k8s.api.certificates.v1.CertificateSigningRequestCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.RequestConditionType",
    },
    "io.k8s.api.certificates.v1.CertificateSigningRequestSpec": {
        "extra": "map[string]v1.ExtraValue",
        "usages": "[]v1.KeyUsage",
    },
    "io.k8s.api.certificates.v1beta1.PodCertificateRequestSpec": {
        "nodeName": "types.NodeName",
        "nodeUID": "types.UID",
        "podUID": "types.UID",
        "serviceAccountUID": "types.UID",
    },
    "io.k8s.api.coordination.v1.LeaseSpec": {"strategy": "v1.CoordinatedLeaseStrategy"},
    "io.k8s.api.coordination.v1alpha2.LeaseCandidateSpec": {
        "strategy": "v1.CoordinatedLeaseStrategy"
    },
    "io.k8s.api.coordination.v1beta1.LeaseCandidateSpec": {
        "strategy": "v1.CoordinatedLeaseStrategy"
    },
    "io.k8s.api.core.v1.AppArmorProfile": {"type": "v1.AppArmorProfileType"},
    "io.k8s.api.core.v1.AttachedVolume": {"name": "v1.UniqueVolumeName"},
    "io.k8s.api.core.v1.AzureDiskVolumeSource": {
        "cachingMode": "v1.AzureDataDiskCachingMode",
        "kind": "v1.AzureDataDiskKind",
    },
    "io.k8s.api.core.v1.Capabilities": {"add": "[]v1.Capability", "drop": "[]v1.Capability"},
    "io.k8s.api.core.v1.ComponentCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.ComponentConditionType",
    },
    "io.k8s.api.core.v1.ConfigMapNodeConfigSource": {"uid": "types.UID"},
    "io.k8s.api.core.v1.Container": {
        "imagePullPolicy": "v1.PullPolicy",
        "restartPolicy": "v1.ContainerRestartPolicy",
        "terminationMessagePolicy": "v1.TerminationMessagePolicy",
    },
    "io.k8s.api.core.v1.ContainerPort": {"protocol": "v1.Protocol"},
    "io.k8s.api.core.v1.ContainerResizePolicy": {
        "resourceName": "v1.ResourceName",
        "restartPolicy": "v1.ResourceResizeRestartPolicy",
    },
    "io.k8s.api.core.v1.ContainerRestartRule": {"action": "v1.ContainerRestartRuleAction"},
    "io.k8s.api.core.v1.ContainerRestartRuleOnExitCodes": {
        "operator": "v1.ContainerRestartRuleOnExitCodesOperator"
    },
    "io.k8s.api.core.v1.ContainerStatus": {
        "allocatedResources": "v1.ResourceList",
        "stopSignal": "v1.Signal",
    },
    "io.k8s.api.core.v1.EmptyDirVolumeSource": {"medium": "v1.StorageMedium"},
    "io.k8s.api.core.v1.EndpointPort": {"protocol": "v1.Protocol"},
    "io.k8s.api.core.v1.HTTPGetAction": {"scheme": "v1.URIScheme"},
    "io.k8s.api.core.v1.HostPathVolumeSource": {"type": "v1.HostPathType"},
    "io.k8s.api.core.v1.ImageVolumeSource": {"pullPolicy": "v1.PullPolicy"},
    "io.k8s.api.core.v1.Lifecycle": {"stopSignal": "v1.Signal"},
    "io.k8s.api.core.v1.LimitRangeItem": {
        "default": "v1.ResourceList",
        "defaultRequest": "v1.ResourceList",
        "max": "v1.ResourceList",
        "maxLimitRequestRatio": "v1.ResourceList",
        "min": "v1.ResourceList",
        "type": "v1.LimitType",
    },
    "io.k8s.api.core.v1.LoadBalancerIngress": {"ipMode": "v1.LoadBalancerIPMode"},
    "io.k8s.api.core.v1.ModifyVolumeStatus": {
        "status": "v1.PersistentVolumeClaimModifyVolumeStatus"
    },
    "io.k8s.api.core.v1.NamespaceCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.NamespaceConditionType",
    },
    "io.k8s.api.core.v1.NamespaceSpec": {"finalizers": "[]v1.FinalizerName"},
    "io.k8s.api.core.v1.NamespaceStatus": {"phase": "v1.NamespacePhase"},
    "io.k8s.api.core.v1.NodeAddress": {"type": "v1.NodeAddressType"},
    "io.k8s.api.core.v1.NodeAllocatableResourceClaimStatus": {
        "resources": "map[v1.ResourceName]resource.Quantity"
    },
    "io.k8s.api.core.v1.NodeCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.NodeConditionType",
    },
    "io.k8s.api.core.v1.NodeSelectorRequirement": {"operator": "v1.NodeSelectorOperator"},
    "io.k8s.api.core.v1.NodeStatus": {
        "allocatable": "v1.ResourceList",
        "capacity": "v1.ResourceList",
        "phase": "v1.NodePhase",
        "volumesInUse": "[]v1.UniqueVolumeName",
    },
    "io.k8s.api.core.v1.ObjectReference": {"uid": "types.UID"},
    "io.k8s.api.core.v1.PersistentVolumeClaimCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.PersistentVolumeClaimConditionType",
    },
    "io.k8s.api.core.v1.PersistentVolumeClaimSpec": {
        "accessModes": "[]v1.PersistentVolumeAccessMode",
        "volumeMode": "v1.PersistentVolumeMode",
    },
    "io.k8s.api.core.v1.PersistentVolumeClaimStatus": {
        "accessModes": "[]v1.PersistentVolumeAccessMode",
        "allocatedResourceStatuses": "map[v1.ResourceName]v1.ClaimResourceStatus",
        "allocatedResources": "v1.ResourceList",
        "capacity": "v1.ResourceList",
        "phase": "v1.PersistentVolumeClaimPhase",
    },
    "io.k8s.api.core.v1.PersistentVolumeSpec": {
        "accessModes": "[]v1.PersistentVolumeAccessMode",
        "capacity": "v1.ResourceList",
        "persistentVolumeReclaimPolicy": "v1.PersistentVolumeReclaimPolicy",
        "volumeMode": "v1.PersistentVolumeMode",
    },
    "io.k8s.api.core.v1.PersistentVolumeStatus": {"phase": "v1.PersistentVolumePhase"},
    "io.k8s.api.core.v1.PodCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.PodConditionType",
    },
    "io.k8s.api.core.v1.PodOS": {"name": "v1.OSName"},
    "io.k8s.api.core.v1.PodReadinessGate": {"conditionType": "v1.PodConditionType"},
    "io.k8s.api.core.v1.PodSecurityContext": {
        "fsGroupChangePolicy": "v1.PodFSGroupChangePolicy",
        "seLinuxChangePolicy": "v1.PodSELinuxChangePolicy",
        "supplementalGroupsPolicy": "v1.SupplementalGroupsPolicy",
    },
    "io.k8s.api.core.v1.PodSpec": {
        "dnsPolicy": "v1.DNSPolicy",
        "overhead": "v1.ResourceList",
        "preemptionPolicy": "v1.PreemptionPolicy",
        "restartPolicy": "v1.RestartPolicy",
    },
    "io.k8s.api.core.v1.PodStatus": {
        "allocatedResources": "v1.ResourceList",
        "phase": "v1.PodPhase",
        "qosClass": "v1.PodQOSClass",
        "resize": "v1.PodResizeStatus",
    },
    "io.k8s.api.core.v1.PortStatus": {"protocol": "v1.Protocol"},
    "io.k8s.api.core.v1.ReplicationControllerCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.ReplicationControllerConditionType",
    },
    "io.k8s.api.core.v1.ResourceHealth": {
        "health": "v1.ResourceHealthStatus",
        "resourceID": "v1.ResourceID",
    },
    "io.k8s.api.core.v1.ResourceQuotaSpec": {
        "hard": "v1.ResourceList",
        "scopes": "[]v1.ResourceQuotaScope",
    },
    "io.k8s.api.core.v1.ResourceQuotaStatus": {
        "hard": "v1.ResourceList",
        "used": "v1.ResourceList",
    },
    "io.k8s.api.core.v1.ResourceRequirements": {
        "limits": "v1.ResourceList",
        "requests": "v1.ResourceList",
    },
    "io.k8s.api.core.v1.ResourceStatus": {"name": "v1.ResourceName"},
    "io.k8s.api.core.v1.ScopedResourceSelectorRequirement": {
        "operator": "v1.ScopeSelectorOperator",
        "scopeName": "v1.ResourceQuotaScope",
    },
    "io.k8s.api.core.v1.SeccompProfile": {"type": "v1.SeccompProfileType"},
    "io.k8s.api.core.v1.Secret": {"type": "v1.SecretType"},
    "io.k8s.api.core.v1.SecurityContext": {"procMount": "v1.ProcMountType"},
    "io.k8s.api.core.v1.ServicePort": {"protocol": "v1.Protocol"},
    "io.k8s.api.core.v1.ServiceSpec": {
        "externalTrafficPolicy": "v1.ServiceExternalTrafficPolicy",
        "internalTrafficPolicy": "v1.ServiceInternalTrafficPolicy",
        "ipFamilies": "[]v1.IPFamily",
        "ipFamilyPolicy": "v1.IPFamilyPolicy",
        "sessionAffinity": "v1.ServiceAffinity",
        "type": "v1.ServiceType",
    },
    "io.k8s.api.core.v1.Taint": {"effect": "v1.TaintEffect"},
    "io.k8s.api.core.v1.Toleration": {
        "effect": "v1.TaintEffect",
        "operator": "v1.TolerationOperator",
    },
    "io.k8s.api.core.v1.TopologySpreadConstraint": {
        "nodeAffinityPolicy": "v1.NodeInclusionPolicy",
        "nodeTaintsPolicy": "v1.NodeInclusionPolicy",
        "whenUnsatisfiable": "v1.UnsatisfiableConstraintAction",
    },
    "io.k8s.api.core.v1.VolumeMount": {
        "mountPropagation": "v1.MountPropagationMode",
        "recursiveReadOnly": "v1.RecursiveReadOnlyMode",
    },
    "io.k8s.api.core.v1.VolumeMountStatus": {"recursiveReadOnly": "v1.RecursiveReadOnlyMode"},
    "io.k8s.api.core.v1.VolumeResourceRequirements": {
        "limits": "v1.ResourceList",
        "requests": "v1.ResourceList",
    },
    "io.k8s.api.discovery.v1.EndpointPort": {"protocol": "v1.Protocol"},
    "io.k8s.api.discovery.v1.EndpointSlice": {"addressType": "v1.AddressType"},
    "io.k8s.api.flowcontrol.v1.FlowDistinguisherMethod": {"type": "v1.FlowDistinguisherMethodType"},
    "io.k8s.api.flowcontrol.v1.FlowSchemaCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.FlowSchemaConditionType",
    },
    "io.k8s.api.flowcontrol.v1.LimitResponse": {"type": "v1.LimitResponseType"},
    "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationCondition": {
        "status": "v1.ConditionStatus",
        "type": "v1.PriorityLevelConfigurationConditionType",
    },
    "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec": {
        "type": "v1.PriorityLevelEnablement"
    },
    "io.k8s.api.flowcontrol.v1.Subject": {"kind": "v1.SubjectKind"},
    "io.k8s.api.networking.v1.HTTPIngressPath": {"pathType": "v1.PathType"},
    "io.k8s.api.networking.v1.IngressPortStatus": {"protocol": "v1.Protocol"},
    "io.k8s.api.networking.v1.NetworkPolicyPort": {"protocol": "v1.Protocol"},
    "io.k8s.api.networking.v1.NetworkPolicySpec": {"policyTypes": "[]v1.PolicyType"},
    "io.k8s.api.node.v1.Overhead": {"podFixed": "v1.ResourceList"},
    "io.k8s.api.policy.v1.PodDisruptionBudgetSpec": {
        "unhealthyPodEvictionPolicy": "v1.UnhealthyPodEvictionPolicyType"
    },
    "io.k8s.api.resource.v1.CapacityRequirements": {
        "requests": "map[v1.QualifiedName]resource.Quantity"
    },
    "io.k8s.api.resource.v1.Device": {
        "attributes": "map[v1.QualifiedName]v1.DeviceAttribute",
        "capacity": "map[v1.QualifiedName]v1.DeviceCapacity",
        "nodeAllocatableResourceMappings": "map[v1.ResourceName]v1.NodeAllocatableResourceMapping",
    },
    "io.k8s.api.resource.v1.DeviceAllocationConfiguration": {"source": "v1.AllocationConfigSource"},
    "io.k8s.api.resource.v1.DeviceConstraint": {
        "distinctAttribute": "v1.FullyQualifiedName",
        "matchAttribute": "v1.FullyQualifiedName",
    },
    "io.k8s.api.resource.v1.DeviceRequestAllocationResult": {
        "consumedCapacity": "map[v1.QualifiedName]resource.Quantity",
        "shareID": "types.UID",
    },
    "io.k8s.api.resource.v1.DeviceSubRequest": {"allocationMode": "v1.DeviceAllocationMode"},
    "io.k8s.api.resource.v1.DeviceTaint": {"effect": "v1.DeviceTaintEffect"},
    "io.k8s.api.resource.v1.DeviceToleration": {
        "effect": "v1.DeviceTaintEffect",
        "operator": "v1.DeviceTolerationOperator",
    },
    "io.k8s.api.resource.v1.ExactDeviceRequest": {"allocationMode": "v1.DeviceAllocationMode"},
    "io.k8s.api.resource.v1.NodeAllocatableResourceMapping": {"capacityKey": "v1.QualifiedName"},
    "io.k8s.api.resource.v1.ResourceClaimConsumerReference": {"uid": "types.UID"},
    "io.k8s.api.resource.v1alpha3.DeviceTaint": {"effect": "v1alpha3.DeviceTaintEffect"},
    "io.k8s.api.resource.v1beta1.BasicDevice": {
        "attributes": "map[v1beta1.QualifiedName]v1beta1.DeviceAttribute",
        "capacity": "map[v1beta1.QualifiedName]v1beta1.DeviceCapacity",
        "nodeAllocatableResourceMappings": "map[v1.ResourceName]v1beta1.NodeAllocatableResourceMapping",
    },
    "io.k8s.api.resource.v1beta1.CapacityRequirements": {
        "requests": "map[v1beta1.QualifiedName]resource.Quantity"
    },
    "io.k8s.api.resource.v1beta1.DeviceAllocationConfiguration": {
        "source": "v1beta1.AllocationConfigSource"
    },
    "io.k8s.api.resource.v1beta1.DeviceConstraint": {
        "distinctAttribute": "v1beta1.FullyQualifiedName",
        "matchAttribute": "v1beta1.FullyQualifiedName",
    },
    "io.k8s.api.resource.v1beta1.DeviceRequest": {"allocationMode": "v1beta1.DeviceAllocationMode"},
    "io.k8s.api.resource.v1beta1.DeviceRequestAllocationResult": {
        "consumedCapacity": "map[v1beta1.QualifiedName]resource.Quantity",
        "shareID": "types.UID",
    },
    "io.k8s.api.resource.v1beta1.DeviceSubRequest": {
        "allocationMode": "v1beta1.DeviceAllocationMode"
    },
    "io.k8s.api.resource.v1beta1.DeviceTaint": {"effect": "v1beta1.DeviceTaintEffect"},
    "io.k8s.api.resource.v1beta1.DeviceToleration": {
        "effect": "v1beta1.DeviceTaintEffect",
        "operator": "v1beta1.DeviceTolerationOperator",
    },
    "io.k8s.api.resource.v1beta1.NodeAllocatableResourceMapping": {
        "capacityKey": "v1beta1.QualifiedName"
    },
    "io.k8s.api.resource.v1beta1.ResourceClaimConsumerReference": {"uid": "types.UID"},
    "io.k8s.api.resource.v1beta2.CapacityRequirements": {
        "requests": "map[v1beta2.QualifiedName]resource.Quantity"
    },
    "io.k8s.api.resource.v1beta2.Device": {
        "attributes": "map[v1beta2.QualifiedName]v1beta2.DeviceAttribute",
        "capacity": "map[v1beta2.QualifiedName]v1beta2.DeviceCapacity",
        "nodeAllocatableResourceMappings": "map[v1.ResourceName]v1beta2.NodeAllocatableResourceMapping",
    },
    "io.k8s.api.resource.v1beta2.DeviceAllocationConfiguration": {
        "source": "v1beta2.AllocationConfigSource"
    },
    "io.k8s.api.resource.v1beta2.DeviceConstraint": {
        "distinctAttribute": "v1beta2.FullyQualifiedName",
        "matchAttribute": "v1beta2.FullyQualifiedName",
    },
    "io.k8s.api.resource.v1beta2.DeviceRequestAllocationResult": {
        "consumedCapacity": "map[v1beta2.QualifiedName]resource.Quantity",
        "shareID": "types.UID",
    },
    "io.k8s.api.resource.v1beta2.DeviceSubRequest": {
        "allocationMode": "v1beta2.DeviceAllocationMode"
    },
    "io.k8s.api.resource.v1beta2.DeviceTaint": {"effect": "v1beta2.DeviceTaintEffect"},
    "io.k8s.api.resource.v1beta2.DeviceToleration": {
        "effect": "v1beta2.DeviceTaintEffect",
        "operator": "v1beta2.DeviceTolerationOperator",
    },
    "io.k8s.api.resource.v1beta2.ExactDeviceRequest": {
        "allocationMode": "v1beta2.DeviceAllocationMode"
    },
    "io.k8s.api.resource.v1beta2.NodeAllocatableResourceMapping": {
        "capacityKey": "v1beta2.QualifiedName"
    },
    "io.k8s.api.resource.v1beta2.ResourceClaimConsumerReference": {"uid": "types.UID"},
    "io.k8s.api.scheduling.v1.PriorityClass": {"preemptionPolicy": "v1.PreemptionPolicy"},
    "io.k8s.api.scheduling.v1alpha2.PodGroupSpec": {"disruptionMode": "v1alpha2.DisruptionMode"},
    "io.k8s.api.scheduling.v1alpha2.PodGroupTemplate": {
        "disruptionMode": "v1alpha2.DisruptionMode"
    },
    "io.k8s.api.storage.v1.CSIDriverSpec": {
        "fsGroupPolicy": "v1.FSGroupPolicy",
        "volumeLifecycleModes": "[]v1.VolumeLifecycleMode",
    },
    "io.k8s.api.storage.v1.StorageClass": {
        "reclaimPolicy": "v1.PersistentVolumeReclaimPolicy",
        "volumeBindingMode": "v1.VolumeBindingMode",
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResource": {"verbs": "v1.Verbs"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.Condition": {"status": "v1.ConditionStatus"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": {
        "propagationPolicy": "v1.DeletionPropagation"
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement": {
        "operator": "v1.FieldSelectorOperator"
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement": {
        "operator": "v1.LabelSelectorOperator"
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry": {
        "operation": "v1.ManagedFieldsOperationType"
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"uid": "types.UID"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {"uid": "types.UID"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions": {"uid": "types.UID"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status": {"reason": "v1.StatusReason"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.StatusCause": {"reason": "v1.CauseType"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails": {"uid": "types.UID"},
}
"""OpenAPI definition -> JSON field name -> the field's Go type."""

UNDERLYING: Mapping[str, str] = {
    "v1.ExtraValue": "[]string",
    "v1.ResourceList": "map[v1.ResourceName]resource.Quantity",
    "v1.Verbs": "[]string",
    "v1beta1.ExtraValue": "[]string",
}
"""Named map and slice types -> their underlying type (what an element of one decodes into)."""
