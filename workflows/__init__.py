"""The acceptance and benchmark suites: probes (real PyTorch) and their Hera definitions."""
