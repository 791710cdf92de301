"""Policy on endpoints: slo (to be written)."""

from __future__ import annotations
