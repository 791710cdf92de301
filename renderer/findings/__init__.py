"""Findings: what every stage reports (Diagnostic, Location) and the registry of rule ids.

The one package every stage imports; it imports nothing of gpuplane.
"""
