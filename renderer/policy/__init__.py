"""Policy: cross-file rules over the validated model, one module per topic.

A rule takes the `Platform` and returns findings; it never reads rendered objects and never
imports a layer. `rule` holds what the topics share; `references`, `tenancy`, `quotas`, `gpus`,
`pools`, `queues` and `delivery` hold the rules; `check.check_policy` runs them all.
"""
