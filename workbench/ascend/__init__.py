"""Ascend-facing parsing core: npu-smi tables, CANN trees, version pairing, error texts.

Pure code: never imports mindspore or textual, runs on Python 3.9. Everything here was
built against real outputs kept in tests/fixtures/ascend/.
"""
