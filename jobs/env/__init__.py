"""The `env` job: is the stack what we think it is, and does the device really compute?

One `check` event per item (interpreter, packages, CANN, driver, firmware, pairing, npu-smi,
visible devices, settings, device probes), each with an evidence level, its evidence and a
hint when it fails; then a `result` summary and the `env-report.json` artifact.

    python -m jobs.env --job-dir DIR

This process never imports mindspore: versions and paths are read from files, and every
device probe runs in its own subprocess (python -m jobs.probe), started before anything else
touches the device. The job fails (exit 1) when a device probe fails or is blocked; other
failed checks are reported without failing it.

The modules: probes (the device probes), inventory (what the machine has, in check order) over
python_stack, ascend_stack, npu and settings; job.py runs probes, then the inventory.
"""
