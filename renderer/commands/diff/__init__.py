"""`gpuplane diff`: what a change means, by team and risk (docs/diff.md).

`platforms.diff_platforms` orchestrates: `checkout` reads the base revision with git, `revision`
renders each side, `platforms`, `teams`, `egress`, `quotas` and `objects` compare them into the
data of `findings` (`field_changes` is their shared field-by-field comparison), and `markdown`,
`json_form` and `text` render the report.
"""
