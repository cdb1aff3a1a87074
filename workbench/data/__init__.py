"""Fashion-MNIST data core: verified loading, locating, splitting, synthetic stand-in, fetch."""

from workbench.data.dataset import CLASS_NAMES, NUM_CLASSES, FashionMnist, scale
from workbench.data.errors import DataError, DataNotFound
from workbench.data.fetch import OFFICIAL_URL_BASE, fetch
from workbench.data.locate import candidate_dirs, locate
from workbench.data.loader import load_fashion_mnist
from workbench.data.official import OFFICIAL_FILES, read_official_file
from workbench.data.preview import preview_indices
from workbench.data.split import Split, describe_split, load_split, save_split, stratified_split
from workbench.data.synthetic import synthetic_fashion

__all__ = [
    "CLASS_NAMES",
    "NUM_CLASSES",
    "OFFICIAL_FILES",
    "OFFICIAL_URL_BASE",
    "DataError",
    "DataNotFound",
    "FashionMnist",
    "Split",
    "candidate_dirs",
    "describe_split",
    "fetch",
    "load_fashion_mnist",
    "load_split",
    "locate",
    "preview_indices",
    "read_official_file",
    "save_split",
    "scale",
    "stratified_split",
    "synthetic_fashion",
]
