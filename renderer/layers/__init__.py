"""Render layers: each turns one cluster's view of the platform into Kubernetes objects.

A layer is one module or package with one public function, `render(view) -> Iterator[Output]`;
`renderer.pipeline` lists them in the order Argo CD applies them. Layers trust a validated model:
they never import policy, never print, never write and never see YAML. A package layer's
`__init__` strings its concern modules together in a fixed order.
"""
