"""The serving template: a vLLM-style OpenAI-compatible Deployment for inference namespaces. It
changes with vLLM's flags and probes, not with the batch kinds.
"""

from __future__ import annotations

from typing import Any

from renderer.layers.templates.pieces import (
    PLACEHOLDER_TAG,
    SCRATCH_PATH,
    SHARED_PATH,
    Target,
    _container,
    _env,
    _gpu_resources,
    _image,
    _memory_of,
    _metadata,
    _pod_spec,
    _pod_template,
    _queue_labels,
    _volumes,
)
from renderer.model.names import gpu_memory_utilization

VLLM_PORT = 8000


def deployment(target: Target) -> dict[str, Any]:
    """An OpenAI-compatible vLLM server on one GPU unit of the inference pool, ready when its
    /health answers; each pod is admitted by Kueue (pod integration) like a one-pod job."""
    name = target.name("vllm")
    resources, claims = _gpu_resources(target, 1)
    volumes, mounts = _volumes(target, _memory_of(resources), read_only_data=True)
    shared = target.cluster.shared_class is not None
    model = f"{SHARED_PATH}/models/{PLACEHOLDER_TAG}" if shared else PLACEHOLDER_TAG
    probe = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10}
    container = _container(
        "vllm",
        _image(target.team, "vllm-openai"),
        resources,
        mounts,
        [*_env(target), {"name": "HF_HOME", "value": f"{SCRATCH_PATH}/huggingface"}],
        command=["vllm", "serve"],
        args=[
            model,
            f"--served-model-name={PLACEHOLDER_TAG}",
            "--host=0.0.0.0",
            f"--port={VLLM_PORT}",
            "--tensor-parallel-size=1",
            f"--gpu-memory-utilization={gpu_memory_utilization(target.pool)}",
        ],
        ports=[{"name": "http", "containerPort": VLLM_PORT}],
        # loading a model takes minutes: startup allows 10, then liveness takes over
        startupProbe={**probe, "failureThreshold": 60},
        readinessProbe={**probe, "failureThreshold": 3},
        livenessProbe={**probe, "failureThreshold": 6},
    )
    selector = {"app.kubernetes.io/name": name}
    template = _pod_template(
        target,
        "Deployment",
        "vllm",
        _pod_spec(target, [container], volumes, claims, None),
        **selector,
        **_queue_labels(target),
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(target, "Deployment", name),
        "spec": {"replicas": 1, "selector": {"matchLabels": selector}, "template": template},
    }
