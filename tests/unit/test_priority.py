"""A niced TUI starts its jobs at the original priority (run in a child: renicing pytest would stick)."""

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, os, subprocess, sys, threading
    from workbench.system.priority import lower_ui_threads, start_launcher, thread_nice

    def nice_of(pid):
        with open("/proc/%d/stat" % pid) as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[16])

    base = thread_nice()
    launcher = start_launcher(int(sys.argv[1]))
    go, before = threading.Event(), []  # a thread started before the renice (as Textual's are before the first paint)
    b = threading.Thread(target=lambda: (go.wait(), before.append(thread_nice())))
    b.start()
    if launcher:
        lower_ui_threads(launcher, int(sys.argv[1]))
    go.set(); b.join()
    ui = thread_nice()
    later = []
    t = threading.Thread(target=lambda: later.append(thread_nice()))
    t.start(); t.join()
    start = lambda: subprocess.Popen([sys.executable, "-c", "import threading; threading.Event().wait()"])
    from_launcher = launcher.call(start) if launcher else start()
    from_ui = start()
    out = {"base": base, "ui": ui, "ui_thread_started_later": later[0], "ui_thread_started_before": before[0],
           "launcher": launcher.call(thread_nice) if launcher else base,
           "job_from_launcher": nice_of(from_launcher.pid), "job_from_ui_thread": nice_of(from_ui.pid)}
    for p in (from_launcher, from_ui):
        p.kill(); p.wait()
    print(json.dumps(out))
""")


def _run(nice):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(nice)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]),
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_ui_thread_is_niced_and_jobs_started_through_the_launcher_are_not():
    r = _run(10)
    assert r["ui"] == min(19, r["base"] + 10)
    assert r["ui_thread_started_later"] == r["ui"]  # Textual's own threads follow the UI
    assert r["ui_thread_started_before"] == r["ui"]  # and so do those started before the renice
    assert r["launcher"] == r["base"]  # but not the launcher
    assert r["job_from_launcher"] == r["base"]  # the job keeps the priority the workbench started with
    assert r["job_from_ui_thread"] == r["ui"]  # the control: a process forked by the niced thread inherits it


def test_nice_zero_changes_nothing():
    r = _run(0)
    assert r["ui"] == r["base"] == r["job_from_ui_thread"] == r["job_from_launcher"] == r["ui_thread_started_before"]
