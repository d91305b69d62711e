"""Shared fixtures for the measurement library's tests (no database anywhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from workers.measure import Api, Capabilities, TargetSpec

MODEL = "scripted-model"


@pytest.fixture
def make_target() -> Callable[..., TargetSpec]:
    def make(url: str, api: str | Api = Api.OPENAI_COMPLETIONS, **caps: Any) -> TargetSpec:
        capabilities = Capabilities(**{"include_usage": True, "ignore_eos": True, **caps})
        return TargetSpec(base_url=url, api=Api(api), model=MODEL, capabilities=capabilities)

    return make
