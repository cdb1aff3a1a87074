"""A job without MindSpore that exercises the spine: steps at a rate, crashes, hangs, bad lines."""

from __future__ import annotations

import os
import signal
import sys
import time

from workbench.jobkit.context import JobContext, run


def main(ctx: JobContext) -> str:
    """Emit `drill.steps` step events at `drill.rate` per second, then misbehave as asked."""
    d = ctx.cfg["drill"]
    ctx.started(mode="drill")
    interval = 1.0 / d["rate"]
    next_t = time.monotonic()
    for i in range(d["steps"]):
        if d["crash_signal"] and d["crash_after"] == i:
            os.kill(os.getpid(), getattr(signal, d["crash_signal"]))
        ctx.emit("step", epoch=1, step=i + 1, loss=1.0 / (i + 1), step_ms=interval * 1000.0, batch_size=64)
        ctx.raise_if_cancelled()
        next_t += interval
        delay = next_t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    if d["crash_signal"] and d["crash_after"] >= d["steps"]:
        os.kill(os.getpid(), getattr(signal, d["crash_signal"]))
    if d["garbage"]:
        with open(ctx.events.path, "a") as fh:
            fh.write("this is not json\n")
    if d["torn"]:
        with open(ctx.events.path, "a") as fh:
            fh.write('{"v": 1, "seq": 999, "t": 0, "type": "st')
            fh.flush()
    if d["ignore_term"]:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if d["hang"]:
        import subprocess  # a grandchild in the same group, to prove the whole group is stopped

        child = subprocess.Popen(["sleep", "600"])
        with open("child.pid", "w") as fh:
            fh.write(str(child.pid))
        while True:
            time.sleep(0.1)
    if d["no_finished"]:
        ctx.events.close()
        os._exit(d["exit_code"])
    ctx.result({"steps": d["steps"]})
    return "ok"


if __name__ == "__main__":
    sys.exit(run(main))
