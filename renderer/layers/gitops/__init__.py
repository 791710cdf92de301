"""GitOps: how the rendered tree reaches each cluster, and who may change what.

`argocd` renders the root Application, the add-on and layer Applications in sync waves and an
AppProject per team; `argo_workflows` the Argo Workflows add-on's chart values (the workflows
layer yields them); `codeowners` the `.github/CODEOWNERS` file from the team files.
"""
