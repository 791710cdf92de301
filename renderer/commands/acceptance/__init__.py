"""`gpuplane acceptance report`: probe results judged against each pool's thresholds
(docs/acceptance-report.md)."""
