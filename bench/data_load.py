"""Time to load, verify and split all 70 000 Fashion-MNIST images, against a plain numpy read.

Each of N rounds runs the three arms in a random order (seeded, printed); the ratios are per round,
to the same round's baseline, shown as median [min–max]; the load average before and after is printed.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import load, ratio, shuffled, spread  # noqa: E402
from workbench.data.loader import load_fashion_mnist  # noqa: E402
from workbench.data.locate import locate
from workbench.data.official import OFFICIAL_FILES, find_file  # noqa: E402
from workbench.data.split import stratified_split

GOAL_S = 1.5


def workbench_load(data_dir: Path, verify: bool) -> None:
    """What a job does: locate, read, check structure (+ SHA-256), split 54 000 / 6 000."""
    ds = load_fashion_mnist(data_dir, verify=verify)
    stratified_split(ds.train_labels, 0.1, 37)


def baseline_load(paths) -> None:
    """The least one can do: gunzip each file and np.frombuffer past its header."""
    for path, header_bytes in paths:
        with gzip.open(path, "rb") as fh:
            np.frombuffer(fh.read(), dtype=np.uint8, offset=header_bytes)


def timed_s(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=None, help="default: the normal search order")
    parser.add_argument("--runs", type=int, default=5, help="rounds, the arms in a random order each")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    data_dir, _tried = locate(args.data_dir)
    paths = []
    for spec in OFFICIAL_FILES:
        path = find_file(data_dir, spec)
        paths.append((path, 4 + 4 * (1 + len(spec.item_shape))))
    print(f"data: {data_dir} ({', '.join(p.name for p, _ in paths)})")
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, {args.runs} rounds, seed {seed}, load {load():.2f}"
    )
    baseline_load(paths)  # warm the page cache so both sides read from memory
    arms = {
        "baseline": lambda: baseline_load(paths),
        "full": lambda: workbench_load(data_dir, True),
        "fast": lambda: workbench_load(data_dir, False),
    }
    rounds = []
    for _ in range(args.runs):
        rounds.append({arm: timed_s(arms[arm]) for arm in shuffled(list(arms), rng)})
    times = {arm: [r[arm] for r in rounds] for arm in arms}
    full_s = statistics.median(times["full"])
    print(f"baseline gzip.open + np.frombuffer        : {spread(times['baseline'], '%.3f')} s")
    for arm, label in (
        ("full", "load + verify (SHA-256) + split          "),
        ("fast", "load + structure checks + split (no hash)"),
    ):
        ratios = [ratio(r[arm], r["baseline"]) for r in rounds]
        print(f"{label} : {spread(times[arm], '%.3f')} s   ratio per round {spread(ratios)}")
    verdict = "under" if full_s < GOAL_S else "OVER"
    print(f"goal: load + verify + split under {GOAL_S:.1f} s -> {verdict} (median {full_s:.3f} s)")
    print(f"load average after: {load():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
