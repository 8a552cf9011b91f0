"""`median` gives what `np.median` gives (which imports numpy.ma, so the results do not use it)."""

from __future__ import annotations

import numpy as np
import pytest

from cachescope.simulate.median import median


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 1001])
def test_median_is_numpys(n):
    rng = np.random.default_rng(n)
    for values in (rng.random(n), rng.integers(0, 5, n), np.sort(rng.random(n))[::-1]):
        assert median(values) == float(np.median(values))


def test_median_of_nothing_is_nan():
    assert np.isnan(median(np.zeros(0)))
