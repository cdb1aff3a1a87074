"""Time to load, verify and split all 70 000 Fashion-MNIST images, against a plain numpy read.

Prints plain lines: median of N runs for each, and the ratio. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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


def median_s(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=None, help="default: the normal search order")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    data_dir, _tried = locate(args.data_dir)
    paths = []
    for spec in OFFICIAL_FILES:
        path = find_file(data_dir, spec)
        paths.append((path, 4 + 4 * (1 + len(spec.item_shape))))
    print(f"data: {data_dir} ({', '.join(p.name for p, _ in paths)})")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, median of {args.runs} runs")
    baseline_load(paths)  # warm the page cache so both sides read from memory
    base_s = median_s(lambda: baseline_load(paths), args.runs)
    full_s = median_s(lambda: workbench_load(data_dir, True), args.runs)
    fast_s = median_s(lambda: workbench_load(data_dir, False), args.runs)
    print(f"baseline gzip.open + np.frombuffer        : {base_s:.3f} s")
    print(f"load + verify (SHA-256) + split           : {full_s:.3f} s   ratio {full_s / base_s:.2f}x")
    print(f"load + structure checks + split (no hash) : {fast_s:.3f} s   ratio {fast_s / base_s:.2f}x")
    verdict = "under" if full_s < GOAL_S else "OVER"
    print(f"goal: load + verify + split under {GOAL_S:.1f} s -> {verdict} ({full_s:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
