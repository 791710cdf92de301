"""Pod Security Admission's checks, ported from k8s.io/pod-security-admission v0.36.2 (the
staging copy of Kubernetes v1.36.2): `api` (levels, versions, the namespace labels), `checks`
(what every check shares), `baseline` and `restricted` (the checks of `policy/check_*.go`, with
the versions they are registered at), `registry` (`policy/registry.go`: which checks run at a
level and version, in which order) and `fixes` (gpuplane's own: what to change so a check
passes). The gate that uses them is `renderer.admission.apiserver.pod_security`."""
