from __future__ import annotations

from pathlib import Path

import pytest

from tests.red_team.harness import Attempt


@pytest.fixture
def attempt(tmp_path: Path) -> Attempt:
    """A fresh copy of the example platform's inputs for one attack."""
    return Attempt.on_example(tmp_path / "repo")
