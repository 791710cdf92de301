"""The typed platform and its arithmetic: no YAML, no I/O, no printing.

`platform` holds the validated inputs as frozen dataclasses; `catalog`, `quantity`, `capacity`,
`admission` and `nodes` compute from them what every layer and command agrees on; `view` is one
cluster's slice of the platform; `names` holds the names and defaults two stages share.
"""
