#!/usr/bin/env bash
# Runs a built suite image the way the rendered templates do, on a machine without GPUs (the
# probes fall back to the CPU and gloo): as the probe Jobs' uid with every capability dropped,
# the dataset sample staged from its file:// URL, storage, training under torchrun, a checkpoint
# written and then restored in a second container; the probe package copied out as the torch
# steps' init container does and run from the copy (and refused by preflight in BARE_IMAGE, an
# image without torch); then, as the Workflow pods' uid, the report
# step's `gpuplane -C /platform acceptance report` on those results, with PLATFORM mounted at
# /platform as Argo's git artifact puts it. CPU numbers are not comparable to a GPU pool's
# thresholds: the report says so (exit 3) or "fail" on what holds on any device (exit 1), but it
# must not crash (exit 2 is a usage error).
#
#   images/acceptance/smoke-test.sh IMAGE [PLATFORM]
#
# CONTAINER_ENGINE=podman uses podman; CLUSTER and POOL (default prod-east, h100-train) name the
# platform's pool the results are for.
set -euo pipefail
image="${1:?usage: smoke-test.sh IMAGE [PLATFORM]}"
platform="${2:-}"
engine="${CONTAINER_ENGINE:-docker}"
cluster="${CLUSTER:-prod-east}"
pool="${POOL:-h100-train}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# the containers' uids write here (umask 0000 inside, so this script can delete what they wrote)
mkdir -m 0777 "$work/results" "$work/checkpoint"
job=(--rm --cap-drop ALL --security-opt no-new-privileges --user 1000:1000
  -v "$work/results:/results" -v "$work/checkpoint:/checkpoint"
  --env "CLUSTER=$cluster" --env "POOL=$pool")

echo "== probes, as the Jobs run them (uid 1000)"
"$engine" run -i "${job[@]}" "$image" bash -s <<'INSIDE'
set -euo pipefail
umask 0000
test "$(id -u):$(id -g)" = "1000:1000"
test -x /usr/bin/test  # the checkpoint step's readinessProbe execs `test -e ...`
command -v torchrun
python -c 'import boto3, torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "boto3", boto3.__version__)'
run() { python -m workflows.probes "$@" --cluster "$CLUSTER" --pool "$POOL"; }
run staging --source file:///opt/gpuplane-acceptance --dest /tmp/data --out /results/staging.json
test -s /tmp/data/data/meta.json && test -s /tmp/data/model/model.safetensors
run storage --path /tmp/storage --bytes 16M --out /results/storage.json
torchrun --standalone --nproc-per-node=2 -m workflows.probes training --seconds 3 \
  --cluster "$CLUSTER" --pool "$POOL" --out /results/training.json
run checkpoint --path /checkpoint --megabytes 8 --phase write
INSIDE

echo "== the checkpoint restored in another container"
"$engine" run -i "${job[@]}" "$image" bash -s <<'INSIDE'
set -euo pipefail
umask 0000
python -m workflows.probes checkpoint --path /checkpoint --phase restore \
  --cluster "$CLUSTER" --pool "$POOL" --out /results/checkpoint.json
INSIDE

echo "== the probe package copied out as the torch steps' init container does (uid 1000)"
mkdir -m 0777 "$work/probes"
"$engine" run "${job[@]}" -v "$work/probes:/gpuplane-probes" "$image" \
  cp -R /opt/gpuplane-probes/workflows /gpuplane-probes/
test -s "$work/probes/workflows/probes/preflight.py"
test ! -e "$work/probes/workflows/suites"  # the probes only, not the engine's suites
copied=(-v "$work/probes:/gpuplane-probes:ro" --env PYTHONPATH=/gpuplane-probes)
# the suite image as a production image: its python3 runs the copy (no GPU expected here)
"$engine" run -i "${job[@]}" "${copied[@]}" "$image" bash -s <<'INSIDE'
set -euo pipefail
cd /tmp
python3 -m workflows.probes preflight --torchrun --out /tmp/facts.json
python3 -c 'import sys, workflows.probes.preflight as p; sys.exit(not p.__file__.startswith("/gpuplane-probes/"))'
torchrun --standalone --nproc-per-node=2 -m workflows.probes training --seconds 2 \
  --cluster "$CLUSTER" --pool "$POOL" --out /tmp/training.json
INSIDE
# an image without torch: preflight fails with one line naming the image and what it lacks
bare="${BARE_IMAGE:-docker.io/library/python:3.11.17-slim-bookworm}"
status=0
"$engine" run "${job[@]}" "${copied[@]}" --env "GPUPLANE_IMAGE=$bare" "$bare" \
  python3 -m workflows.probes preflight --expect-gpu > "$work/preflight.txt" 2>&1 || status=$?
cat "$work/preflight.txt"
if [ "$status" -ne 1 ] \
  || ! grep -qF "preflight: image $bare cannot run the probes: no importable torch" "$work/preflight.txt"; then
  echo "preflight did not refuse an image without torch (exit $status)" >&2
  exit 1
fi

if [ -n "$platform" ]; then
  echo "== the report step (uid 65532, the platform at /platform)"
  status=0
  "$engine" run --rm --cap-drop ALL --security-opt no-new-privileges --user 65532:65532 \
    -v "$(cd "$platform" && pwd):/platform:ro" -v "$work/results:/results:ro" "$image" \
    gpuplane -C /platform acceptance report /results > "$work/report.txt" 2>&1 || status=$?
  cat "$work/report.txt"
  if grep -q Traceback "$work/report.txt" || ! grep -q "$pool" "$work/report.txt" \
    || [ "$status" -eq 2 ] || [ "$status" -gt 3 ]; then
    echo "the report step failed (exit $status)" >&2
    exit 1
  fi
fi
echo "== the image runs the suite's commands"
