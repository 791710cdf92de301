"""`gpuplane fit`: would Kueue admit this job, where, and if not why (docs/fit.md).

An offline rerun of Kueue's admission against the queues `renderer.model.queue_plans` plans: the
job's namespace picks the team's ClusterQueue (through the namespace's `default` LocalQueue),
its labels pick the priority, and each pod set gets the first flavor, in the ClusterQueue's
order, whose node labels and taints it accepts and whose quota holds it. The numbers are
Kueue's: a ClusterQueue may use its nominal quota plus, capped by its borrowing limit, what the
other ClusterQueues of its cohort lend (their lending limit, or all their nominal quota when they
set none). Messages reuse Kueue's own wording (`pkg/scheduler/flavorassigner`), so what `fit`
prints is what `kubectl describe workload` would say.

`fit` assumes an empty cluster: no other workload holds quota. "fits" and "borrows" therefore
mean "would be admitted now if the cluster were idle"; "never" means no amount of waiting helps.

Kueue turns every job it manages into a Workload: one pod set per kind of pod (a Job has `main`,
a JobSet one per replicated job, a RayJob `head`, one per worker group and `submitter`), each
with a pod count and a pod template. `load.check_fit` reads the job file; `readers` does what
Kueue does, into the neutral `Workload` of `podsets`, without knowing about teams, pools or
queues, and never raises on bad input (it returns an `Unreadable` that says why). `checker`
finds the job's ClusterQueue and priority, `admit` runs the admission with the flavor assignment
of `flavors`, and `text` writes the `result` for people or tools.
"""
