"""Policy on endpoints: endpoints (to be written)."""

from __future__ import annotations
