"""gpuplane: a policy and render engine for shared Kubernetes GPU clusters."""

__version__ = "0.1.0"
