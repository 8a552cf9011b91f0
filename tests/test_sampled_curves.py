"""Sampled curves against exact answers: SHARDS against the exact LRU curve, miniature simulations against
full runs of the same policies, and the error bands that come with them."""

import numpy as np
import pytest

import cachescope


@pytest.fixture(scope="module")
def zipf_trace(tmp_path_factory):
    """3 M lookups of Zipf(1.05)-popular keys among ~1.5 M ids, as a keys text trace."""
    rng = np.random.default_rng(2026)
    keys = rng.zipf(1.05, 3_000_000) % 1_500_000
    path = tmp_path_factory.mktemp("zipf") / "zipf.keys"
    np.savetxt(path, keys, fmt="%d")
    return str(path)


def test_shards_at_one_percent_is_within_half_a_point_of_the_exact_curve(zipf_trace):
    # From 100 / rate entries up: what a 1% sample resolves, where an `auto` sampled curve starts.
    caps = "10k:1M:40"
    exact = cachescope.simulate_trace(zipf_trace, curve="lru", curve_capacities=caps).curves
    # Fixed rate, at the target; fixed size (8,000 keys a sample, under 1% of the keys here), within a point.
    for sample, limit in ((dict(sample="1%"), 0.005), (dict(sample_keys=8_000), 0.01)):
        sampled = cachescope.simulate_trace(zipf_trace, curve="lru", curve_capacities=caps, **sample).curves
        assert set(sampled["method"]) == {"shards"} and sampled["sample_rate"].iloc[0] <= 0.0101
        assert (sampled["salts"] == 4).all()
        both = exact.merge(sampled, on="capacity", suffixes=("", "_s"))
        assert len(both) == 40
        error = (both["hit_rate_s"] - both["hit_rate"]).abs()
        assert error.mean() <= limit, (sample, error.describe())
        covered = (both["hit_rate_low"] <= both["hit_rate"]) & (both["hit_rate"] <= both["hit_rate_high"])
        assert covered.mean() >= 0.9, (sample, covered.mean())


@pytest.mark.parametrize("policy", ["wtinylfu", "s3fifo", "arc"])
def test_miniature_simulations_band_covers_the_full_run(zipf_trace, policy):
    caps = [20_000, 100_000, 400_000]
    result = cachescope.simulate_trace(zipf_trace, curve=policy, curve_capacities=caps, sample="10%",
                                       **{policy: caps})
    curve = result.curves.set_index("capacity")
    assert set(curve["method"]) == {"minisim"} and (curve["salts"] == 4).all()
    full = result.summary.set_index("capacity")["hit_rate"]
    for cap in caps:
        low, high = curve.loc[cap, "hit_rate_low"], curve.loc[cap, "hit_rate_high"]
        assert low <= full[cap] <= high, (policy, cap, low, full[cap], high)
        assert abs(curve.loc[cap, "hit_rate"] - full[cap]) < 0.02
