"""`gpuplane fit`: would Kueue admit this job, where, and if not why (docs/fit.md)."""
