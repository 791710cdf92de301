#!/usr/bin/env bash
# Open a pull request with the acceptance evidence the suites left on a cluster.
#
# Usage: tools/evidence_pr.sh [--no-pr]   (run at the repository root; KUBECONFIG names the cluster)
#
# Reads every ConfigMap acceptance-evidence-<pool> in namespace gpuplane-acceptance (the suite's
# report step applies one per pool, labelled gpuplane.dev/cluster, gpuplane.dev/pool and
# gpuplane.dev/verdict), writes its key <pool>.yaml byte for byte to
# acceptance/<cluster>/<pool>.yaml, checks the repository with `gpuplane validate`, and commits
# the files on a new branch and opens a pull request with `gh` (skipped with --no-pr: the files
# are only written and validated). Names are checked against the DNS label form before they make
# a path, and no text from the cluster reaches a command line other than as one argument.
# See docs/acceptance-evidence.md.
set -euo pipefail

namespace=gpuplane-acceptance
open_pr=1
if [[ "${1:-}" == "--no-pr" ]]; then
  open_pr=0
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--no-pr]" >&2
  exit 2
fi
name='^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'

mapfile -t configmaps < <(
  kubectl get configmap -n "$namespace" -l gpuplane.dev/verdict \
    -o go-template='{{range .items}}{{.metadata.name}}{{"\n"}}{{end}}'
)
written=()
for configmap in "${configmaps[@]}"; do
  [[ "$configmap" == acceptance-evidence-* ]] || continue
  pool=${configmap#acceptance-evidence-}
  cluster=$(kubectl get configmap "$configmap" -n "$namespace" \
    -o go-template='{{index .metadata.labels "gpuplane.dev/cluster"}}')
  if ! [[ "$pool" =~ $name && "$cluster" =~ $name ]]; then
    echo "skipping $configmap: pool or cluster is not a DNS label" >&2
    continue
  fi
  mkdir -p "acceptance/$cluster"
  target="acceptance/$cluster/$pool.yaml"
  kubectl get configmap "$configmap" -n "$namespace" \
    -o go-template="{{index .data \"$pool.yaml\"}}" >"$target.new"
  mv "$target.new" "$target"
  written+=("$target")
done
if [[ ${#written[@]} -eq 0 ]]; then
  echo "no acceptance-evidence-* ConfigMap in $namespace" >&2
  exit 1
fi
gpuplane validate
printf 'wrote %s\n' "${written[@]}"
if [[ $open_pr -eq 0 ]]; then
  exit 0
fi
if [[ -z "$(git status --porcelain -- "${written[@]}")" ]]; then
  echo "the evidence in the repository is already this" >&2
  exit 0
fi
branch="acceptance-evidence/$(date -u +%Y%m%dT%H%M%SZ)"
git switch -c "$branch"
git add -- "${written[@]}"
git commit -m "Record acceptance evidence from the suites" \
  -m "Written by tools/evidence_pr.sh from the acceptance-evidence ConfigMaps."
git push -u origin "$branch"
gh pr create --fill --base main --head "$branch"
