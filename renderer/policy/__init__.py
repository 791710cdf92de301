"""Policy: cross-file rules over the validated model, one module per topic.

A rule takes the `Platform` and returns findings; it never reads rendered objects and never
imports a layer. `check.check_policy` runs them all.
"""
