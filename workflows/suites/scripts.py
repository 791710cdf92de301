"""The two Python programs the suites run in their containers, the Job runner and step 6's
exporter: constants, so nothing from an input file is ever pasted into a script.
"""

from __future__ import annotations

import json

from workflows.suites.settings import (
    IMAGE_DIGEST_LABEL,
    IMAGE_NAMESPACE_LABEL,
    QUEUE_WAIT_LABEL,
    RESULT_PREFIX,
    SUITE_GAUGES,
)

RUNNER = """\
import json, os, subprocess, sys, time

plan = json.loads(sys.argv[1])
state = os.environ["STATE"]
os.makedirs(state, exist_ok=True)


def run(specs):
    results, status = [], 0
    for key, command, writes in specs:
        out = os.path.join(state, key + ".json")
        code = subprocess.call(command + (["--out", out] if writes else []))
        status = status or code
        if writes:
            try:
                with open(out) as f:
                    results.append([key, json.load(f)])
            except (OSError, ValueError):
                pass  # not rank 0 of a distributed probe, or the probe died: the log says
        elif code:
            results.append([key, {"ok": False, "error": "%s exited with %d" % (key, code)}])
    return results, status


def report(results, status):
    for key, result in results:
        print(RESULT_PREFIX, key, json.dumps(result, sort_keys=True), flush=True)
    sys.exit(status)


def preflight(command):
    done = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    for line in lines:
        print(line, flush=True)
    if done.returncode:
        line = lines[-1] if lines else "preflight exited with %d" % done.returncode
        specs = plan["run"] + plan.get("after", [])
        report([[key, {"ok": False, "error": line}] for key, _, writes in specs if writes], 1)


if "preflight" in plan:
    preflight(plan["preflight"])
marker = os.path.join(state, "interrupt-me.json")
if "after" not in plan:
    report(*run(plan["run"]))
if not os.path.exists(marker):
    results, status = run(plan["run"])
    if status:
        report(results, status)
    with open(marker + ".tmp", "w") as f:
        json.dump(results, f)
    os.replace(marker + ".tmp", marker)
    time.sleep(int(os.environ["INTERRUPT_WAIT_SECONDS"]))
    sys.exit("the workflow did not delete this pod: nothing was restored")
with open(marker) as f:
    before = json.load(f)
after, status = run(plan["after"])
report(before + after, status)
""".replace("RESULT_PREFIX", json.dumps(RESULT_PREFIX))
"""What every suite Job's container runs: with `preflight` (a step in the pool's production
image), that check first, its output in the log, and when it fails its last line as the error of
every result the step owes, and nothing else; then `python3 -m workflows.probes …` for each probe
in turn, then each result on one line of the log (`gpuplane-result <key> <json>`), where the
Workflow reads it. It runs on whatever `python3` the image has: nothing in it is newer than
Python 3.5. With `after` (step 5), the first pod runs `run`, marks the workspace and turns Ready, and
waits; the Workflow deletes it; the Job's replacement pod finds the mark and runs `after` (the
restore of what the first pod wrote, and training resumed from it), then prints both pods'
results."""


def _gauge_fields() -> dict[str, list[list[str]]]:
    """SUITE_GAUGES by probe: [file name, metrics key] each."""
    found: dict[str, list[list[str]]] = {}
    for gauge in SUITE_GAUGES:
        found.setdefault(gauge.probe, []).append([gauge.parameter, gauge.field])
    return found


EXPORT = (
    """\
import datetime, json, math, os, re

out = os.environ["OUT"]
os.makedirs(out, exist_ok=True)


def when(text):
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def seconds(start, end):
    return str(max(0, int((end - start).total_seconds()))) if start and end else None


def ran(text):
    # the image reference and digest of the last pod with both, from the step's `image` part
    for line in reversed(text.splitlines()):
        parts = line.split()
        if len(parts) == 2:
            digest = parts[1].rpartition("@")[2]
            if re.fullmatch("sha256:[0-9a-f]{64}", digest):
                return parts[0], digest
    return None, None


namespace = os.environ.get("IMAGE_NAMESPACE", "")
if os.environ.get("RESULTS"):
    with open(os.path.join(out, "results-name"), "w") as f:
        f.write(os.environ["RESULTS"] + ("-" + namespace if namespace else ""))

for step in json.loads(os.environ["STEPS"]):
    prefix = step["step"].upper() + "_"
    found = {}
    for line in os.environ.get(prefix + "LOG", "").splitlines():
        if line.startswith(RESULT_PREFIX + " "):
            _, key, text = line.split(" ", 2)
            found[key] = json.loads(text)
    created, started, finished = (
        when(os.environ.get(prefix + part, "")) for part in ("CREATED", "STARTED", "FINISHED")
    )
    for key, probe in step["results"]:
        result = found.get(key) or {}
        if "schemaVersion" not in result:
            result = {
                "schemaVersion": 1,
                "probe": probe,
                "cluster": os.environ["CLUSTER"],
                "pool": os.environ["POOL"],
                "startedAt": os.environ.get(prefix + "STARTED") or "1970-01-01T00:00:00Z",
                "durationSeconds": 0,
                "ok": False,
                "error": result.get("error") or "the %s job printed no result" % step["step"],
                "environment": {},
                "metrics": {},
            }
        environment = result.setdefault("environment", {})
        reference, digest = ran(os.environ.get(prefix + "IMAGE", ""))
        for name, value in (
            (QUEUE_WAIT_LABEL, seconds(created, started)),
            ("gpuplane.dev/job-seconds", seconds(started, finished)),
            ("image", reference),
            (IMAGE_DIGEST_LABEL, digest),
            (IMAGE_NAMESPACE_LABEL, namespace or None),
        ):
            if value is not None:
                environment[name] = value
        with open(os.path.join(out, key + ".json"), "w") as f:
            json.dump(result, f, sort_keys=True)
        for name, field in GAUGES.get(probe, ()):
            value = result.get("metrics", {}).get(field)
            if type(value) in (int, float) and math.isfinite(value):
                with open(os.path.join(out, name), "w") as f:
                    f.write(repr(float(value)))
""".replace("RESULT_PREFIX", json.dumps(RESULT_PREFIX))
    .replace("QUEUE_WAIT_LABEL", json.dumps(QUEUE_WAIT_LABEL))
    .replace("IMAGE_DIGEST_LABEL", json.dumps(IMAGE_DIGEST_LABEL))
    .replace("IMAGE_NAMESPACE_LABEL", json.dumps(IMAGE_NAMESPACE_LABEL))
    .replace("GAUGES", json.dumps(_gauge_fields()))
)
"""Step 6's first half: each expected result from the Jobs' logs (a failed result in its place
when a Job printed none), with its Job's queue wait (created to admitted: Kueue unsuspends the
Job, which sets its start time), run time, and the image its pod ran (`image`, the reference,
and IMAGE_DIGEST_LABEL, the `sha256:` digest the kubelet reports as the probe container's
`imageID`, whatever prefix the runtime puts before it) added to its `environment`, one file each
(on a namespace's run, IMAGE_NAMESPACE_LABEL too); the results ConfigMap's name (`RESULTS`, with
`-<namespace>` on a namespace's run) in the file `results-name`; and
each SUITE_GAUGES figure the results hold, as a number in a file of its own, for the
template's Argo custom metrics."""

WINDOW = """\
import json, os, ssl, sys, time, urllib.error, urllib.parse, urllib.request

ACCOUNT = os.environ.get("ACCOUNT_DIR", "/var/run/secrets/kubernetes.io/serviceaccount/")
API = "https://%s:%s" % (os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
TLS = ssl.create_default_context(cafile=ACCOUNT + "ca.crt")
ACTION, SELECTOR, KEY, LOSS_KEY, RUN = (
    os.environ[n] for n in ("ACTION", "SELECTOR", "TAINT_KEY", "NODE_LOSS_KEY", "RUN")
)
DEADLINE = time.time() + int(os.environ["WAIT_SECONDS"])


def call(method, path, body=None, kind="application/json"):
    with open(ACCOUNT + "token") as f:
        token = f.read().strip()
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(API + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + token)
    request.add_header("Content-Type", kind)
    try:
        with urllib.request.urlopen(request, context=TLS, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, {}


def listed(path, **query):
    status, body = call("GET", path + "?" + urllib.parse.urlencode(query))
    if status != 200:
        sys.exit("GET %s: HTTP %d" % (path, status))
    return body.get("items", [])


def nodes():
    return listed("/api/v1/nodes", labelSelector=SELECTOR)


def set_taints(name, drop, add=()):
    # read, change, write with the read resourceVersion: a concurrent change is retried
    for _ in range(10):
        status, node = call("GET", "/api/v1/nodes/" + urllib.parse.quote(name))
        if status != 200:
            sys.exit("GET node %s: HTTP %d" % (name, status))
        taints = [t for t in node["spec"].get("taints", []) if t["key"] not in drop]
        patch = {
            "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
            "spec": {"taints": taints + list(add)},
        }
        status, _ = call(
            "PATCH", "/api/v1/nodes/" + urllib.parse.quote(name), patch, "application/merge-patch+json"
        )
        if status == 200:
            return
        if status != 409:
            sys.exit("PATCH node %s: HTTP %d" % (name, status))
    sys.exit("node %s kept changing: not tainted" % name)


def tolerates(pod, taint):
    # as Kubernetes' Toleration.ToleratesTaint: the effect (empty: every effect), the key (empty:
    # every key), then Exists matches any value and Equal (or empty) the same value; Lt and Gt
    # compare numbers, and a run's uid is none
    for t in pod["spec"].get("tolerations") or []:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        operator = t.get("operator") or "Equal"
        if operator == "Exists":
            return True
        if operator == "Equal" and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def in_the_way(node, taint):
    found = []
    for pod in listed("/api/v1/pods", fieldSelector="spec.nodeName=" + node):
        meta = pod["metadata"]
        if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            continue
        if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
            continue
        if not tolerates(pod, taint):
            found.append(pod)
    return found


def evict_until_free(names, taint):
    while True:
        left = []
        for name in names:
            for pod in in_the_way(name, taint):
                meta = pod["metadata"]
                path = "/api/v1/namespaces/%s/pods/%s/eviction" % (meta["namespace"], meta["name"])
                body = {
                    "apiVersion": "policy/v1",
                    "kind": "Eviction",
                    "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                }
                status, _ = call("POST", path, body)
                if status not in (200, 201, 404):
                    left.append("%s/%s on %s (HTTP %d)" % (meta["namespace"], meta["name"], name, status))
                elif status != 404:
                    left.append("%s/%s on %s (evicted, terminating)" % (meta["namespace"], meta["name"], name))
        if not left:
            return
        if time.time() > DEADLINE:
            sys.exit("not free in time, still running:\\n  " + "\\n  ".join(left))
        print("waiting for %d pods" % len(left), flush=True)
        time.sleep(15)


if ACTION == "reserve":
    taint = {"key": KEY, "value": RUN, "effect": "NoSchedule"}
    names = [n["metadata"]["name"] for n in nodes()]
    if not names:
        sys.exit("no node carries " + SELECTOR)
    for name in names:
        set_taints(name, {KEY}, [taint])
    evict_until_free(names, taint)
    print("reserved %d nodes: %s" % (len(names), " ".join(names)))
elif ACTION == "lose-node":
    job = os.environ["JOB"]
    pods = listed(
        "/api/v1/namespaces/%s/pods" % os.environ["JOBS_NAMESPACE"],
        labelSelector="batch.kubernetes.io/job-name=" + job,
    )
    names = sorted({p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")})
    if len(names) != 1:
        sys.exit("the pods of job %s are on %d nodes, not one" % (job, len(names)))
    taint = {"key": LOSS_KEY, "value": RUN, "effect": "NoSchedule"}
    set_taints(names[0], {LOSS_KEY}, [taint])
    evict_until_free(names, taint)
    print("took node %s away" % names[0])
else:
    names = [n["metadata"]["name"] for n in nodes()]
    for name in names:
        set_taints(name, {KEY, LOSS_KEY})
    print("released %d nodes" % len(names))
"""
"""The window's node steps, in the platform's suite image (Python's standard library only, the
API server through the Workflow pod's ServiceAccount token): `reserve` taints every node of the
pool (`SELECTOR`) `KEY=<run>:NoSchedule`, evicts through the Eviction API (PodDisruptionBudgets
respected: a refused eviction is retried) every pod there that does not tolerate the taint (not
DaemonSet pods, not mirror pods, not finished pods), and waits until none is left or
`WAIT_SECONDS` passed; `lose-node` does the same with `NODE_LOSS_KEY` to the one node of the Job
`JOB` (a drain of that node); `release` removes both taints from every node of the pool,
whatever their value (a crashed run's too)."""
