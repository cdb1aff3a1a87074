"""Check ASCEND_RT_VISIBLE_DEVICES before a job starts.

The runtime's rules, from real failures: entries must be in ascending order (207004 /
EE1001 "it must be configured in ascending order"), and each entry is an index into the
devices this container or VM can see, so it must lie in [0, number seen) (107001 "input data
rang[0-2)" when a VM seeing 2 NPUs was given 4).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Sequence

from workbench.events.protocol import Evidence

_WELL_FORMED_RE = re.compile(r"^\d+(,\d+)*$")


def _result(status: str, detail: str, ids: Optional[Sequence[int]] = None) -> Dict[str, Any]:
    """Check result dict in the evidence vocabulary."""
    return {"status": status, "detail": detail, "ids": list(ids) if ids is not None else None}


def check_visible_devices(value: Optional[str], seen_npus: Optional[Sequence[int]]) -> Dict[str, Any]:
    """Is ASCEND_RT_VISIBLE_DEVICES well-formed, ascending, free of duplicates, within the devices seen?

    `seen_npus` are the device ids npu-smi listed (None when npu-smi gave no list).
    Returns {status, detail, ids}: not-run when the variable is unset, blocked when the
    range cannot be checked for want of a device list.
    """
    if value is None:
        return _result(Evidence.NOT_RUN, "ASCEND_RT_VISIBLE_DEVICES is not set: every device is visible")
    if not _WELL_FORMED_RE.match(value):
        return _result(
            Evidence.FAIL,
            "ASCEND_RT_VISIBLE_DEVICES=%r: expected comma-separated integers "
            "such as '0,1,2' (no spaces, no empty entries)" % value,
        )
    ids = [int(part) for part in value.split(",")]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        return _result(
            Evidence.FAIL,
            "ASCEND_RT_VISIBLE_DEVICES=%r lists %s more than once" % (value, ", ".join(map(str, duplicates))),
            ids,
        )
    if ids != sorted(ids):
        return _result(
            Evidence.FAIL,
            "ASCEND_RT_VISIBLE_DEVICES=%r is not in ascending order "
            "(the runtime fails with 207004 / EE1001); use %s" % (value, ",".join(map(str, sorted(ids)))),
            ids,
        )
    if seen_npus is None:
        return _result(
            Evidence.BLOCKED,
            "ASCEND_RT_VISIBLE_DEVICES=%r is well-formed and ascending; range not "
            "checked: no device list from npu-smi" % value,
            ids,
        )
    count = len(seen_npus)
    outside = [i for i in ids if i >= count]
    if outside:
        return _result(
            Evidence.FAIL,
            "ASCEND_RT_VISIBLE_DEVICES=%r: %s outside [0, %d), the %d device(s) "
            "npu-smi shows here (ids %s); the runtime fails with 107001"
            % (value, ", ".join(map(str, outside)), count, count, ", ".join(map(str, seen_npus)) or "none"),
            ids,
        )
    return _result(
        Evidence.PASS, "ASCEND_RT_VISIBLE_DEVICES=%r: ascending, within the %d device(s) seen" % (value, count), ids
    )


def check_device_id(device_id: Any, value: Optional[str], listed: int) -> Dict[str, Any]:
    """Can the runtime open device `device_id`? {status, detail, ids}: ids are what it numbers 0..n-1.

    The runtime numbers the devices it sees from 0: all `listed` device rows of npu-smi when
    ASCEND_RT_VISIBLE_DEVICES is unset, else the entries of that list (each checked as above).
    """
    visible = check_visible_devices(value, list(range(listed)))
    if value is not None and visible["status"] != Evidence.PASS:
        return _result(visible["status"], visible["detail"], visible["ids"])
    count = listed if value is None else len(visible["ids"] or [])
    seen = (
        "npu-smi lists %d device row(s) and ASCEND_RT_VISIBLE_DEVICES is unset" % listed
        if value is None
        else "ASCEND_RT_VISIBLE_DEVICES=%r leaves %d of the %d device row(s) npu-smi lists" % (value, count, listed)
    )
    ids = list(range(count))
    if not isinstance(device_id, int) or isinstance(device_id, bool) or not 0 <= device_id < count:
        return _result(
            Evidence.FAIL,
            "device.id=%r: the runtime sees %s (%s)"
            % (device_id, "ids 0..%d" % (count - 1) if count else "no device", seen),
            ids,
        )
    return _result(Evidence.PASS, "device.id=%d is one of ids 0..%d (%s)" % (device_id, count - 1, seen), ids)
