"""The Training view's whole-run loss history stays bounded and keeps the trend."""

from workbench.views.training import WholeRunHistory


def test_history_is_bounded_and_averages_neighbours():
    h = WholeRunHistory(max_points=8)
    for i in range(100):
        h.append(float(i))
    assert len(h) < 8 and h.per_point == 16
    # each point is the mean of per_point consecutive steps, in order
    assert h[0] == sum(range(16)) / 16.0
    assert list(h) == sorted(h)


def test_short_history_keeps_every_step():
    h = WholeRunHistory(max_points=8)
    for v in (3.0, 2.0, 1.0):
        h.append(v)
    assert list(h) == [3.0, 2.0, 1.0] and h.per_point == 1
