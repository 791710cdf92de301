"""Output: the objects layers return, their validation against the real schemas, canonical YAML,
the text environment, and the atomic writer. Imports only `findings`, so every stage can use it.
"""
