"""The workload readers: what Kueue's integrations make of a job file (one module per integration
family), into the neutral `podsets.Workload`, without knowing about teams, pools or queues."""
