"""Fixtures of `gpuplane cost`'s tests: the worked example's usage and the platform it runs on."""
