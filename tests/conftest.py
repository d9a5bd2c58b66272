"""Shared test setup: hypothesis profiles and the matrix of backends.

Every test that takes the ``backend_name`` fixture runs once per registered backend (the
lark-style test matrix), so a new backend is tested by everything at once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from unmask.backends import available

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=100_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("UNMASK_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(params=available())
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES
