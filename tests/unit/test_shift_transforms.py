"""Each built-in shift on small known arrays: what it does, determinism from the seed, severity monotone."""

from __future__ import annotations

import numpy as np
import pytest

from jobs.shift import transforms as T
from workbench.analysis.shift import SETS


def square(n: int = 4) -> np.ndarray:
    """`n` images of a light 10×10 square (0.8) on black, centred."""
    x = np.zeros((n, 28, 28), np.float32)
    x[:, 9:19, 9:19] = 0.8
    return x


def garment(n: int = 4) -> np.ndarray:
    """`n` images of a shape with no symmetry: a 6×14 bar and a 4×4 block at one corner."""
    x = np.zeros((n, 28, 28), np.float32)
    x[:, 7:21, 11:17] = 0.7
    x[:, 7:11, 17:21] = 0.9
    return x


def test_the_core_names_the_same_sets_as_the_jobs():
    assert list(T.SHIFTS) == list(SETS)
    assert all(T.SHIFTS[n][0] == SETS[n][0] for n in SETS)


@pytest.mark.parametrize("name", list(T.SHIFTS))
def test_every_shift_keeps_the_contract_and_is_deterministic(name):
    x = garment()
    for s in T.SEVERITIES:
        a, b = T.apply(name, s, x, seed=3), T.apply(name, s, x, seed=3)
        assert a.shape == x.shape and a.dtype == np.float32 and a.min() >= 0 and a.max() <= 1
        assert np.array_equal(a, b)
        assert not np.array_equal(a, x), "%s at severity %d changed nothing" % (name, s)


@pytest.mark.parametrize("name", [n for n in T.SHIFTS if n != "flip"])
def test_severity_is_monotone_in_pixel_change(name):
    rng = np.random.default_rng(0)
    x = np.clip(garment(16) + rng.uniform(0, 0.2, (16, 28, 28)).astype(np.float32), 0, 1)
    change = [float(np.abs(T.apply(name, s, x, seed=1) - x).mean()) for s in T.SEVERITIES]
    assert change == sorted(change), change


def test_lighting():
    x = square(1)
    assert T.apply("brightness", 1, x, 0)[0, 0, 0] == pytest.approx(0.1)
    c = T.apply("contrast", 5, x, 0)[0]
    assert c[14, 14] - c[0, 0] == pytest.approx(0.8 * 0.15, abs=1e-6)
    assert T.apply("gamma", 2, x, 0)[0, 14, 14] == pytest.approx(0.8**1.8, rel=1e-5)


def test_background():
    x = square(1)
    lb = T.apply("light_background", 3, x, 0)[0]
    assert lb[0, 0] == pytest.approx(0.45) and lb[14, 14] == pytest.approx(0.45 + 0.55 * 0.8)
    inv = T.apply("inverted", 5, x, 0)[0]
    assert inv[0, 0] == pytest.approx(1.0) and inv[14, 14] == pytest.approx(0.2)


def test_framing_and_geometry():
    x = square(1)
    area = (x > 0.4).sum()
    assert (T.apply("scale", 5, x, 0) > 0.4).sum() < area / 2  # half the size: a quarter of the area
    zoomed = T.apply("crop_resize", 5, x, 0)[0]
    assert (zoomed > 0.4).sum() > area * 2
    moved = T.apply("translate", 5, x, 0)[0]
    cy, cx = np.argwhere(moved > 0.4).mean(axis=0)
    assert np.hypot(cy - 13.5, cx - 13.5) == pytest.approx(8.0, abs=0.6)
    turned = T.apply("rotate", 4, x, 0)[0]  # a square turned 45°: its corners leave the axis-aligned box
    assert turned[9, 9] < 0.4 and turned[13, 8] > 0.4
    sheared = T.apply("shear", 5, x, 0)[0]
    rows = np.argwhere(sheared > 0.4)
    assert rows[rows[:, 0] == 9][:, 1].mean() != rows[rows[:, 0] == 18][:, 1].mean()


def test_blur_spreads_and_keeps_mass():
    x = square(1)
    for name in ("motion_blur", "defocus_blur"):
        y = T.apply(name, 3, x, 0)
        assert y.sum() == pytest.approx(x.sum(), rel=1e-4) and (y > 0).sum() > (x > 0).sum()
    motion = T.apply("motion_blur", 5, x, 0)[0]
    assert (motion[:, 8] > 0).any() and not (motion[8, :] > 0).any()  # along the rows only


def test_noise():
    x = square(1)
    shot = T.apply("shot_noise", 3, x, 0)[0]
    assert shot[0, 0] == 0 and 0.6 < shot[9:19, 9:19].mean() < 1.0 and shot[9:19, 9:19].std() > 0
    hit = T.apply("impulse_noise", 5, np.full((50, 28, 28), 0.5, np.float32), 0)
    assert np.isin(hit[hit != 0.5], (0.0, 1.0)).all() and 0.12 < (hit != 0.5).mean() < 0.22


def test_flips():
    x = np.zeros((1, 28, 28), np.float32)
    x[0, 2, 5] = 1.0
    where = {s: tuple(np.argwhere(T.apply("flip", s, x, 0)[0])[0]) for s in T.SEVERITIES}
    assert where == {1: (2, 22), 2: (25, 5), 3: (25, 22), 4: (22, 2), 5: (5, 25)}


def test_bad_names_and_severities_are_named():
    with pytest.raises(KeyError, match="unknown shift 'fog'"):
        T.apply("fog", 1, square(), 0)
    with pytest.raises(ValueError, match="severity 6"):
        T.apply("rotate", 6, square(), 0)
