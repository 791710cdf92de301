"""`gpuplane diff`: what a change means, by team and risk (docs/diff.md)."""
