"""Training batches: numpy slices in a seeded per-epoch order (fast), or MindSpore's dataset pipeline.

Both feeds take the same order from the same numpy Generator, so they produce the same
batches and the same losses; only the time to produce them differs. The tail batch is kept.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Mapping, Tuple

import numpy as np

# The seed of the synthetic images every job generates (data, train, test, export, align). It does
# not depend on the split seed, so re-splitting keeps the same images.
SYNTHETIC_SEED = 0

FEEDS = ("numpy", "dataset")


def epoch_order(rng: np.random.Generator, n: int) -> np.ndarray:
    """This epoch's sample order: one permutation drawn from the run's generator."""
    return rng.permutation(int(n))


def steps_per_epoch(n: int, batch_size: int, max_steps: int = 0) -> int:
    """Batches in an epoch with the tail batch kept; `max_steps` > 0 caps it."""
    if n <= 0 or batch_size <= 0:
        raise ValueError("steps_per_epoch: n=%r and batch_size=%r must both be > 0" % (n, batch_size))
    steps = -(-int(n) // int(batch_size))
    return min(steps, int(max_steps)) if max_steps and max_steps > 0 else steps


def batch_bounds(n: int, batch_size: int, step: int) -> Tuple[int, int]:
    """[start, stop) positions in the epoch order of batch `step` (0-based)."""
    start = int(step) * int(batch_size)
    if start >= n or step < 0:
        raise IndexError("batch %d does not exist for n=%d, batch_size=%d" % (step, n, batch_size))
    return start, min(start + int(batch_size), int(n))


def generator_state(rng: np.random.Generator) -> Dict[str, Any]:
    """The generator's state as plain JSON-able data."""
    return dict(rng.bit_generator.state)


def generator_from_state(state: Dict[str, Any]) -> np.random.Generator:
    """A generator that continues exactly where the saved state left off."""
    name = state.get("bit_generator")
    bit_cls = getattr(np.random, str(name), None)
    if bit_cls is None:
        raise ValueError("saved generator state names bit generator %r, which numpy lacks" % (name,))
    bit_gen = bit_cls()
    bit_gen.state = state
    return np.random.Generator(bit_gen)


class NumpyFeed:
    """Batches sliced from in-memory arrays; each becomes a Tensor without a copy (from_numpy)."""

    name = "numpy"

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int):
        if len(x) != len(y):
            raise ValueError("NumpyFeed: %d images but %d labels" % (len(x), len(y)))
        self.x, self.y, self.batch_size = x, y, int(batch_size)

    def numpy_batches(
        self, order: np.ndarray, start_step: int, stop_step: int
    ) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
        """(images, labels) numpy batches `start_step` .. `stop_step - 1` of the epoch order."""
        n = len(order)
        for step in range(int(start_step), int(stop_step)):
            start, stop = batch_bounds(n, self.batch_size, step)
            idx = order[start:stop]
            yield self.x[idx], self.y[idx]

    def batches(self, order: np.ndarray, start_step: int, stop_step: int) -> Iterator[Tuple[Any, Any, int]]:
        """(image Tensor, label Tensor, batch size) for the given steps of this epoch."""
        to_tensor = _tensor_maker()
        for xb, yb in self.numpy_batches(order, start_step, stop_step):
            yield to_tensor(xb), to_tensor(yb), len(yb)


class DatasetFeed:
    """The same batches through NumpySlicesDataset + SubsetSampler + batch (for comparison)."""

    name = "dataset"

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int):
        if len(x) != len(y):
            raise ValueError("DatasetFeed: %d images but %d labels" % (len(x), len(y)))
        self.x, self.y, self.batch_size = x, y, int(batch_size)

    def batches(self, order: np.ndarray, start_step: int, stop_step: int) -> Iterator[Tuple[Any, Any, int]]:
        """(image Tensor, label Tensor, batch size) for the given steps of this epoch."""
        import mindspore.dataset as ds

        n = len(order)
        first, _ = batch_bounds(n, self.batch_size, start_step)
        _, last = batch_bounds(n, self.batch_size, stop_step - 1)
        sampler = ds.SubsetSampler(order[first:last].tolist())  # keeps the given order
        data = ds.NumpySlicesDataset({"image": self.x, "label": self.y}, shuffle=None, sampler=sampler)
        data = data.batch(self.batch_size, drop_remainder=False)
        for image, label in data.create_tuple_iterator(num_epochs=1):
            yield image, label, int(label.shape[0])


def make_feed(name: str, x: np.ndarray, y: np.ndarray, batch_size: int):
    """The feed called `name` (train.feed)."""
    if name == "numpy":
        return NumpyFeed(x, y, batch_size)
    if name == "dataset":
        return DatasetFeed(x, y, batch_size)
    raise ValueError("train.feed is %r; expected one of %s" % (name, ", ".join(FEEDS)))


def _tensor_maker():
    """Tensor.from_numpy (shares the fresh batch array) where it exists, else Tensor(array)."""
    from mindspore import Tensor

    return getattr(Tensor, "from_numpy", None) or Tensor


class RunData:
    """Scaled train/validation arrays of a run and how they were obtained."""

    def __init__(
        self,
        train_x: np.ndarray,
        train_y: np.ndarray,
        val_x: np.ndarray,
        val_y: np.ndarray,
        description: Dict[str, Any],
        how: str,
    ):
        self.train_x, self.train_y, self.val_x, self.val_y = train_x, train_y, val_x, val_y
        self.description = description
        self.how = how


def data_settings(own_cfg: Mapping[str, Any], ref_cfg: Any) -> Dict[str, Any]:
    """The data section that produced a split: the data job's own config when known, else ours."""
    if isinstance(ref_cfg, dict) and isinstance(ref_cfg.get("data"), dict):
        return dict(ref_cfg["data"])
    return dict(own_cfg["data"])


def load_source(data_cfg: Dict[str, Any], split_meta: Any = None):
    """The FashionMnist arrays named by a data config section (official files or synthetic).

    Synthetic data is generated the way the data job does (its SYNTHETIC_SEED), or with the
    seed and counts a split record names, so every job sees the same images.
    """
    from workbench.data.loader import load_fashion_mnist
    from workbench.data.synthetic import synthetic_fashion

    if data_cfg.get("source") == "synthetic":
        meta = split_meta if isinstance(split_meta, dict) else {}
        counts = meta.get("synthetic_counts") or {}
        return synthetic_fashion(
            counts.get("train", data_cfg["synthetic_train"]),
            counts.get("test", data_cfg["synthetic_test"]),
            meta.get("synthetic_seed", SYNTHETIC_SEED),
        )
    return load_fashion_mnist(data_cfg.get("dir"))


def find_split_record(ref: Any) -> Any:
    """The split.json inside a data job folder (artifacts/ first), or the given file."""
    from pathlib import Path

    ref = Path(ref)
    if ref.is_file():
        return ref
    for candidate in (ref / "artifacts" / "split.json", ref / "split.json"):
        if candidate.is_file():
            return candidate
    return None


def load_run_data(job_dir: Any, cfg: Mapping[str, Any]) -> RunData:
    """Train/val arrays for a run: the split of `data.from`, else a split made now with data.split_seed."""
    from jobs.common.models import read_job_config, resolve_job_ref
    from workbench.data.dataset import scale
    from workbench.data.split import describe_split, index_sha256, load_split, stratified_split
    from workbench.jobkit.context import JobFailed

    data_from = cfg["data"].get("from")
    if data_from:
        ref = resolve_job_ref(job_dir, "data.from", data_from)
        record = find_split_record(ref)
        if record is None:
            raise JobFailed(
                "data.from is %r: %s holds no split.json (looked in artifacts/ and the folder)" % (data_from, ref),
                hint="run the data job first, or drop data.from to split on the fly",
                type_="DataError",
            )
        ref_cfg = read_job_config(ref) if ref.is_dir() else None
        settings = data_settings(cfg, ref_cfg)
        split = load_split(record)
        if split.meta.get("synthetic") and settings.get("source") != "synthetic":
            settings["source"] = "synthetic"
        source = load_source(settings, split.meta)
        train_idx, val_idx = split.train_idx, split.val_idx
        _check_split_fits(split, source, record)
        seed, fraction = split.seed, split.val_fraction
        how = "split loaded from %s (index hashes verified)" % record
    else:
        settings = dict(cfg["data"])
        source = load_source(settings)
        seed, fraction = settings["split_seed"], settings["val_fraction"]
        train_idx, val_idx = stratified_split(source.train_labels, fraction, seed)
        how = (
            "no data.from: split made on the fly with data.split_seed=%d, val_fraction=%s "
            "(same rule as the data job)" % (seed, fraction)
        )
    t_limit, v_limit = cfg["train"]["train_limit"], cfg["train"]["val_limit"]
    train_sel = train_idx[:t_limit] if t_limit else train_idx
    val_sel = val_idx[:v_limit] if v_limit else val_idx
    description = describe_split(
        source.train_labels, train_idx, val_idx, seed, fraction, source.files, synthetic=source.synthetic
    )
    description.pop("per_class", None)
    description.update(
        {
            "source": "synthetic" if source.synthetic else "official",
            "dir": str(source.dir) if source.dir is not None else None,
            "n_train_split": int(train_idx.size),
            "n_val_split": int(val_idx.size),
            "train_limit": t_limit,
            "val_limit": v_limit,
            "n_train": int(train_sel.size),
            "n_val": int(val_sel.size),
            "train_idx_sha256": index_sha256(train_idx),
            "val_idx_sha256": index_sha256(val_idx),
            "scale": "pixel / 255, float32 [N, 1, 28, 28]",
            "how": how,
        }
    )
    return RunData(
        scale(source.train_images[train_sel]),
        source.train_labels[train_sel].astype(np.int32),
        scale(source.train_images[val_sel]),
        source.train_labels[val_sel].astype(np.int32),
        description,
        how,
    )


def _check_split_fits(split: Any, source: Any, record: Any) -> None:
    """A split's indices must fall inside the data, and its source hashes must match the files."""
    from workbench.jobkit.context import JobFailed

    n = len(source.train_labels)
    top = max(int(split.train_idx.max(initial=-1)), int(split.val_idx.max(initial=-1)))
    if top >= n:
        raise JobFailed(
            "%s: index %d is outside the %d training images loaded" % (record, top, n),
            hint="the split was made from other data (synthetic vs official?)",
            type_="DataError",
        )
    recorded = {f.get("name"): f.get("sha256") for f in split.meta.get("source_files") or []}
    for f in source.files:
        want = recorded.get(f["name"])
        if want and f.get("sha256") and want != f["sha256"]:
            raise JobFailed(
                "%s: split was made from %s with SHA-256 %s, loaded file has %s"
                % (record, f["name"], want, f["sha256"]),
                hint="use the same data.dir as the data job",
                type_="DataError",
            )


def load_test_set(train_dir: Any, train_cfg: Mapping[str, Any]):
    """(scaled test images, labels, description) of the data a training run used."""
    from pathlib import Path

    from jobs.common.models import read_job_config, resolve_job_ref
    from workbench.data.dataset import scale
    from workbench.data.split import load_split

    settings = dict(train_cfg["data"])
    data_from = settings.get("from")
    split_meta = None
    if data_from:
        # Resolved from the training job's folder: that is where the id meant something.
        ref = resolve_job_ref(Path(train_dir), "data.from (of %s)" % Path(train_dir).name, data_from)
        settings = data_settings(train_cfg, read_job_config(ref) if ref.is_dir() else None)
        record = find_split_record(ref)
        split_meta = load_split(record).meta if record is not None else None
        if split_meta and split_meta.get("synthetic"):
            settings["source"] = "synthetic"
    source = load_source(settings, split_meta)
    description = {
        "source": "synthetic" if source.synthetic else "official",
        "dir": str(source.dir) if source.dir is not None else None,
        "files": [{"name": f["name"], "sha256": f["sha256"]} for f in source.files if "t10k" in f["name"]],
        "n_test": int(len(source.test_labels)),
        "scale": "pixel / 255, float32 [N, 1, 28, 28]",
    }
    return scale(source.test_images), source.test_labels.astype(np.int32), description
