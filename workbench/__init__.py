"""ms-workbench: a terminal workbench for MindSpore training on Ascend boards."""

__version__ = "0.1.0"
