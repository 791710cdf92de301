"""Public GPU-cluster traces as `gpuplane simulate` workloads (`simulate --from SOURCE`,
docs/simulate.md#traces-from-public-clusters): each source's reader turns its upstream rows
into the rows the gpuplane trace reader produces (`renderer.inputs.trace.TraceRow`), so the
simulator is the same whatever the trace came from.

What is shared by the sources: the platform's *targets* (every team's training namespace on a
Kueue cluster, weighted by the team's nominal whole-GPU quota there) and the one rule that
spreads a source's identities (Alibaba's pods, Philly's virtual clusters) over them
(`assign`: smooth weighted round-robin over the identities in sorted order).
"""
