"""The networks, standalone (MindSpore and numpy only): the hand-over's model.py is this file, byte for byte.

Every job builds its network from here, so the code a colleague receives is the code that trained
and exported the model. In the hand-over folder (export/deliverable/ of a session record):

    python model.py        # loads model.ckpt, predicts reference/inputs.npy, compares with reference/logits.npy

    import model
    net = model.load("model.ckpt", "mlp", 128)          # name and hidden: deliverable.json "model"
    logits = model.predict(net, model.preprocess(images))  # images: uint8 [N, 28, 28]
    labels = [model.CLASS_NAMES[i] for i in logits.argmax(axis=1)]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

MODEL_NAMES = ("mlp", "cnn")
NUM_CLASSES = 10
# Fashion-MNIST's label order: output column i is the score of CLASS_NAMES[i].
CLASS_NAMES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
PREPROCESSING = "pixel / 255 as float32, shape [N, 1, 28, 28] (NCHW), from uint8 [N, 28, 28]"


def build_net(name, hidden=128):
    """A fresh network by name: `mlp` (the course's 784-hidden-10) or `cnn` (two conv blocks)."""
    from mindspore import nn

    if name == "mlp":
        # Same layer order as the course text, so its checkpoints name parameters the same
        # way: 1.weight, 1.bias, 3.weight, 3.bias.
        return nn.SequentialCell(nn.Flatten(), nn.Dense(784, hidden), nn.ReLU(), nn.Dense(hidden, NUM_CLASSES))
    if name == "cnn":
        # Small on purpose: on a 2-core CPU each conv channel costs step time.
        return nn.SequentialCell(
            nn.Conv2d(1, 8, 3, pad_mode="same", has_bias=True),
            nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(8, 16, 3, pad_mode="same", has_bias=True),
            nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Dense(16 * 7 * 7, hidden),
            nn.ReLU(),
            nn.Dense(hidden, NUM_CLASSES),
        )
    raise ValueError("model name is %r; expected one of %s" % (name, ", ".join(MODEL_NAMES)))


def preprocess(images):
    """uint8 images [N, 28, 28] -> float32 [N, 1, 28, 28] = pixel / 255 (the training input contract)."""
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError("images have dtype %s; expected uint8 pixels 0..255" % images.dtype)
    if images.ndim != 3 or tuple(images.shape[1:]) != (28, 28):
        raise ValueError("images have shape %s; expected [N, 28, 28]" % (list(images.shape),))
    out = images.astype(np.float32).reshape(images.shape[0], 1, 28, 28)
    out /= np.float32(255.0)
    return out


def load(ckpt_path, name, hidden=128):
    """The network with the checkpoint's weights, in eval mode; ValueError unless every parameter matched."""
    import mindspore as ms

    net = build_net(name, hidden)
    params = ms.load_checkpoint(str(ckpt_path))
    # load_param_into_net only warns on a name that does not match and keeps the random weight: check both lists.
    not_in_ckpt, not_in_net = ms.load_param_into_net(net, params, strict_load=True)
    if list(not_in_ckpt or []) or list(not_in_net or []):
        raise ValueError(
            "%s does not match the %s network (hidden %s): missing from the file %s; not in the network %s"
            % (ckpt_path, name, hidden, list(not_in_ckpt or []), list(not_in_net or []))
        )
    net.set_train(False)
    return net


def predict(net, inputs, batch_size=1000):
    """Logits float32 [N, 10] of preprocessed inputs, fetched back with asnumpy()."""
    from mindspore import Tensor

    inputs = np.asarray(inputs, dtype=np.float32)
    parts = [net(Tensor(inputs[i : i + batch_size])).asnumpy() for i in range(0, len(inputs), batch_size)]
    return np.concatenate(parts).astype(np.float32) if parts else np.zeros((0, NUM_CLASSES), np.float32)


def check_reference(folder):
    """Load the hand-over in `folder`, predict its reference inputs -> (max |diff|, allowed, wrong argmax)."""
    folder = Path(folder)
    about = json.loads((folder / "deliverable.json").read_text(encoding="utf-8"))
    net = load(folder / about["files"]["checkpoint"], about["model"]["name"], about["model"]["hidden"])
    inputs = np.load(str(folder / about["files"]["reference_inputs"]))
    expected = np.load(str(folder / about["files"]["reference_logits"]))
    got = predict(net, inputs)
    tol = about["tolerance"]
    diff = np.abs(got - expected)
    allowed = tol["atol"] + tol["rtol"] * np.abs(expected)
    return float(diff.max()), bool((diff <= allowed).all()), int((got.argmax(1) != expected.argmax(1)).sum())


def main(argv=None):
    """`python model.py [FOLDER]`: the reference outputs reproduced (exit 0) or the size of the difference (1)."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else Path(__file__).resolve().parent
    worst, within, flips = check_reference(folder)
    print(
        "reference outputs %s: max |logit difference| %.3g, %d argmax change(s)"
        % ("reproduced" if within and not flips else "NOT reproduced", worst, flips)
    )
    return 0 if within and not flips else 1


if __name__ == "__main__":
    sys.exit(main())
