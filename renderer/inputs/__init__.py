"""Inputs: reading the repository's YAML (positions, hostile-input guards) and checking each
document against its kind's JSON Schema. The only stage that sees files in the input folders.
"""
