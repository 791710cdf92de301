"""Policy on endpoints: hosts (to be written)."""

from __future__ import annotations
