"""`gpuplane acceptance report`: probe results judged against each pool's thresholds
(docs/acceptance-report.md). `load` reads and checks the result files, `judge` compares them with
the pools' thresholds, `forms` renders the report as text, Markdown or JSON; `results` holds the
data they pass along and `readable` how its values are shown."""
