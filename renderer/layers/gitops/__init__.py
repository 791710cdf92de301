"""GitOps: how the rendered tree reaches each cluster, and who may change what.

`argocd` renders the root Application, the add-on and layer Applications in sync waves and an
AppProject per team; `argo_workflows` the Argo Workflows add-on's chart values (the workflows
layer yields them); `codeowners` the `.github/CODEOWNERS` file from the team files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from renderer.layers.gitops import argocd
from renderer.model.view import ClusterView
from renderer.output.manifest import Output

LAYER = argocd.LAYER


def render(view: ClusterView, layer_folders: Sequence[str]) -> Iterator[Output]:
    """The Argo CD objects of one cluster, one Application per folder the other layers wrote."""
    yield from argocd.render(view, layer_folders)
