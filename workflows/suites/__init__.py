"""The acceptance and benchmark suites as Hera objects, built from one cluster's view of the
platform.

Per pool a WorkflowTemplate `acceptance-<pool>` runs the guide's seven steps in order, and one
`benchmark-<pool>` runs the benchmarks; per cluster a PostSync hook Workflow (Argo CD runs it after
every sync of the cluster's workflows Application) and a CronWorkflow run every pool's acceptance
through `templateRef`. The Workflows run in the namespace `gpuplane-acceptance`; everything that
needs a GPU is a Job the Workflow creates in a team namespace, through that namespace's LocalQueue,
so the suite is queued, admitted and preempted like any team job. How results flow and why each
choice was made: docs/acceptance-suites.md.

Nothing from an input file is pasted into a script: the scripts are constants, the Job manifests
are dumped from data, and per-pool values reach the containers as arguments and environment
variables.

- `settings`: the names, images, labels and timings the suites share;
- `scripts`: the Job runner and step 6's exporter, the Python the containers run;
- `placement`: `Target`, the team queue each pool's suite is submitted through;
- `program`: the steps of each suite, their probes and shapes;
- `jobs`: each step's Job manifest and the run's workspace claim;
- `templates`: the WorkflowTemplates `acceptance-<pool>` and `benchmark-<pool>`;
- `every_pool`: the PostSync hook Workflow and the CronWorkflow that run every pool;
- `references`: the built objects as data, and `check_references`, which finds what dangles.
"""
