"""`ms-workbench` on its terminal: the first frame written is the whole Environment screen, drawn with the garbage
collector off and at the priority it started with; once the app has noted its first paint the collector is on
again and the UI is niced (config ui.nice, 10 by default)."""

from __future__ import annotations

from tests.support.terminal import driver_writes

STATUS = "ms-workbench \u2502"  # what bench/startup.py waits for


def test_the_first_frame_written_is_the_whole_environment_screen(tmp_path):
    entries = driver_writes(tmp_path, ["--sessions", str(tmp_path / "sessions")])
    first = next((e for e in entries if STATUS in e.get("write", "")), None)
    assert first is not None, "no frame with the status bar was written"
    # the status bar, the run line, the checks table's header, the detail pane, the devices title and the key bar
    parts = ("Environment", "no env job yet", "level", "detail", "select a check", "Devices (npu-smi)", "Re-run checks")
    for part in parts:
        assert part in first["write"], "the first frame lacks %r" % part
    assert first["gc"] is False  # nothing collected before the first frame
    painted = [e for e in entries if "first_paint" in e]
    assert painted and painted[0]["gc"] is True  # and collection is back on after it
    assert painted[0]["nice"] == min(19, first["nice"] + 10)  # the UI yields to jobs only once it has painted
