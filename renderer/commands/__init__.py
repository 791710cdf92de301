"""Commands: each answers one question from the model and the layers' public functions
(plan, fit, diff, acceptance report, new). They return data and text; the CLI prints it.
"""
