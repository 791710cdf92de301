"""The serving template: a vLLM-style OpenAI-compatible Deployment for inference namespaces. It
changes with vLLM's flags and probes, not with the batch kinds.
"""

from __future__ import annotations

from typing import Any

from renderer.layers.workload_templates.pieces import (
    PLACEHOLDER_TAG,
    SCRATCH_PATH,
    SHARED_PATH,
    Target,
    container_env,
    container_spec,
    gpu_resources,
    image_ref,
    memory_of,
    metadata,
    pod_spec,
    pod_template,
    queue_labels,
    volumes_and_mounts,
)
from renderer.model.names import gpu_memory_utilization

VLLM_PORT = 8000


def deployment(target: Target) -> dict[str, Any]:
    """An OpenAI-compatible vLLM server on one GPU unit of the inference pool, ready when its
    /health answers; each pod is admitted by Kueue (pod integration) like a one-pod job."""
    name = target.name("vllm")
    resources, claims = gpu_resources(target, 1)
    volumes, mounts = volumes_and_mounts(target, memory_of(resources), read_only_data=True)
    shared = target.cluster.shared_class is not None
    model = f"{SHARED_PATH}/models/{PLACEHOLDER_TAG}" if shared else PLACEHOLDER_TAG
    probe = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10}
    container = container_spec(
        "vllm",
        image_ref(target.team, "vllm-openai"),
        resources,
        mounts,
        [*container_env(target), {"name": "HF_HOME", "value": f"{SCRATCH_PATH}/huggingface"}],
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
    template = pod_template(
        target,
        "Deployment",
        "vllm",
        pod_spec(target, [container], volumes, claims, None),
        **selector,
        **queue_labels(target),
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(target, "Deployment", name),
        "spec": {"replicas": 1, "selector": {"matchLabels": selector}, "template": template},
    }
