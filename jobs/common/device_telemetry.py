"""Live device telemetry while training: npu-smi sampled for the job's own chip, as `device` events.

A helper thread runs npu-smi (`info` once, to map the device id to its NPU and chip, then
`info -t common` and `-t usages` for that NPU) at most once per `interval_s`. The thread never
touches the event file: it queues samples, and the training loop drains the queue between
steps, so a slow npu-smi can delay a sample but never a step. A failing or slow npu-smi is
logged once and sampling stops.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
from typing import Any, Deque, Dict, List, Optional, Tuple

from workbench.ascend import activity, chipstatus, npusmi

INTERVAL_S = 1.0
KINDS = ("common", "usages")
# One sample (two npu-smi calls) slower than this makes the sampler a load of its own: stop.
SLOW_S = 5.0


def device_event(status: Dict[str, Any]) -> Dict[str, Any]:
    """The `device` event fields of one chip status (memory: HBM where the chip has it, else DDR)."""
    memory = status.get("hbm_mb") or status.get("memory_mb") or [None, None]
    return {
        "ai_core_pct": status.get("aicore_pct"),
        "mem_used_mb": memory[0],
        "mem_total_mb": memory[1],
        "temp_c": status.get("temperature_c"),
        # The chip's own power; 310P cards measure the whole card only (the MCU's): a card field, never the chip's.
        "power_w": status.get("power_w"),
        "card_power_w": status.get("card_power_w"),
        "health": status.get("health"),
        "npu": status.get("npu"),
        "chip": status.get("chip"),
    }


class DeviceTelemetry:
    """Samples one chip in a daemon thread; `drain()` hands the queued events and log lines to the caller."""

    def __init__(
        self,
        command: str,
        lock_path: str,
        device_id: int,
        visible: Optional[str],
        timeout_s: float = 10.0,
        interval_s: float = INTERVAL_S,
        slow_s: float = SLOW_S,
    ):
        self.run = functools.partial(npusmi.run_npu_smi, timeout_s=timeout_s, lock_path=lock_path, command=command)
        self.device_id = int(device_id)
        self.visible = visible
        self.interval_s = max(float(interval_s), INTERVAL_S)  # at most once a second, whatever is asked
        self.slow_s = slow_s
        self.mapping: Dict[str, Any] = {}
        self.samples = 0
        self.stopped_why: Optional[str] = None
        self._queue: Deque[Tuple[str, Dict[str, Any]]] = collections.deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="device-telemetry", daemon=True)

    def start(self) -> DeviceTelemetry:
        """Start sampling."""
        self._thread.start()
        return self

    def stop(self, wait_s: float = 0.0) -> None:
        """Ask the thread to stop; wait up to wait_s for it (an npu-smi call in flight ends at its own limit)."""
        self._stop.set()
        if self._thread.is_alive() and wait_s > 0:
            self._thread.join(wait_s)

    def drain(self) -> List[Tuple[str, Dict[str, Any]]]:
        """The (type, fields) events queued since the last drain: `device` samples and `log` lines."""
        out = []
        while self._queue:
            out.append(self._queue.popleft())
        return out

    def _give_up(self, why: str) -> None:
        """Log once why sampling stops, and stop."""
        self.stopped_why = why
        self._queue.append(("log", {"level": "warning", "message": "device telemetry stopped: %s" % why}))
        self._stop.set()

    def _map(self) -> bool:
        """Which NPU and chip this job's device id is (npu-smi info); False (and logged) when it cannot tell."""
        rc, out, err, _ = self.run(["info"])
        failure = npusmi.classify_failure(rc, out, err)
        if failure is not None:
            self._give_up("npu-smi info failed (%s): %s" % (failure["code"], npusmi.error_text(out, err)))
            return False
        self.mapping = activity.npu_for_device(self.device_id, self.visible, npusmi.parse_info(out).devices)
        if self.mapping.get("npu") is None:
            self._give_up("device id %d maps to no NPU: %s" % (self.device_id, self.mapping.get("error")))
            return False
        return True

    def _loop(self) -> None:
        try:
            if not self._map():
                return
            npu, chip = self.mapping["npu"], self.mapping.get("chip") or 0
            while not self._stop.is_set():
                began = time.monotonic()
                status = chipstatus.read_chip_status(self.run, npu, chip, kinds=KINDS)
                took = time.monotonic() - began
                if status["errors"]:
                    self._give_up("npu-smi -t %s" % "; ".join("%s: %s" % kv for kv in sorted(status["errors"].items())))
                    return
                self._queue.append(("device", device_event(status)))
                self.samples += 1
                if took > self.slow_s:
                    self._give_up(
                        "one sample took %.1f s (over %.0f s): npu-smi is too slow to poll" % (took, self.slow_s)
                    )
                    return
                self._stop.wait(max(0.0, self.interval_s - took))
        except Exception as exc:  # the sampler must never take the job down; say why it stopped
            self._give_up("%s: %s" % (type(exc).__name__, exc))
