"""The fresh process that loads an exported artefact (`python -m jobs.export.loader`), its MindSpore Lite side and its report."""
