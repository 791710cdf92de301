"""Kueue's scheduler, offline: flavor assignment, topology-aware placement, preemption (classical
and fair sharing) and the usage a cluster reports, laid out as `pkg/scheduler` is."""
