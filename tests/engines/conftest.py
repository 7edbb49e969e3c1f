"""One local Ray for every Ray test of this folder (starting Ray costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="package")
def ray_local() -> Iterator[Any]:
    """A private Ray on this machine, two CPUs, shared by the tests of this package."""
    pytest.importorskip("ray.data")
    from cigeval.engines import ray_session

    with ray_session(num_cpus=2) as ray:
        ray.data.DataContext.get_current().enable_progress_bars = False
        yield ray
