"""The TUI following one real training job in tmux: UI CPU per window, the tmux server's share, and controls.

One long real training job (MLP, CPU, graph mode) runs from this tree. Each arm is the real
`ms-workbench attach` in its own tmux session of one tmux server (120×36, Training screen): this
tree, optionally a second tree (`--before-tree`, e.g. the previous commit), and a control, this
tree attached to a finished copy of the same session (same size, nothing arriving). Every TUI is
frozen (cgroup freezer, else SIGSTOP) except the one whose window it is, so the arms never compete
and are measured seconds apart in one run. A following window starts at the thaw: the TUI first
catches up on what arrived while it was frozen (it reads those lines anyway when it follows all
along), so its CPU share is the UI process's CPU seconds from the thaw to the window's end (from
/proc/<pid>/stat) over that time; the share after the catch-up alone is kept too. Windows where every
TUI is frozen give the floor of the measurement (must be ~0) and, with the job's own steady steps,
the images/s the following windows are compared with. The tmux server is this bench's own, on a
socket in its temporary folder: another run of the bench (or anyone's tmux) is never touched.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.config.layers import defaults  # noqa: E402
from workbench.run.runner import LOCK_DIR_ENV, JobRunner  # noqa: E402
from workbench.session.store import SessionStore  # noqa: E402

SOCKET: List[str] = []  # this run's private tmux socket (a path in its temporary folder)
FROZEN = "frozen"
CATCH_UP_S = 0.5  # after a thaw: the events of the frozen seconds are read first (counted in the window)


class Freezer:
    """Freezes and thaws one process without a signal (cgroup v1 freezer), else with SIGSTOP/SIGCONT.

    A signal is not neutral: Textual's driver handles SIGCONT by restarting application mode (a
    terminal re-init and a full repaint), which a following window would then be charged for.
    """

    ROOT = Path("/sys/fs/cgroup/freezer")

    def __init__(self, pid: int, name: str) -> None:
        self.pid, self.group = pid, None
        if os.access(str(self.ROOT), os.W_OK):
            group = self.ROOT / ("wbbench-%d-%s" % (os.getpid(), name))
            group.mkdir()
            (group / "cgroup.procs").write_text(str(pid))
            self.group = group
        self.method = "cgroup freezer" if self.group else "SIGSTOP/SIGCONT"

    def _state(self, want: str) -> None:
        (self.group / "freezer.state").write_text(want)
        for _ in range(100):
            if (self.group / "freezer.state").read_text().strip() == want:
                return
            time.sleep(0.01)
        raise RuntimeError("pid %d: freezer state did not become %s" % (self.pid, want))

    def freeze(self) -> None:
        """Stop the process; return once it is stopped."""
        if self.group is not None:
            self._state("FROZEN")
            return
        os.kill(self.pid, signal.SIGSTOP)
        for _ in range(100):
            if Path("/proc/%d/stat" % self.pid).read_text().rsplit(")", 1)[1].split()[0] == "T":
                return
            time.sleep(0.01)
        raise RuntimeError("pid %d did not stop on SIGSTOP" % self.pid)

    def thaw(self) -> None:
        """Let the process run again."""
        if self.group is not None:
            self._state("THAWED")
        else:
            os.kill(self.pid, signal.SIGCONT)

    def close(self) -> None:
        """Thaw, and give the process back to the root group."""
        self.thaw()
        if self.group is not None:
            try:
                (self.ROOT / "cgroup.procs").write_text(str(self.pid))
            except OSError:
                pass  # it has ended
            self.group.rmdir()


def start_steady_training(store: SessionStore) -> tuple:
    """Start a long real training job (MLP, CPU) in a new session; return (sid, job dir) once it steps steadily."""
    sid = store.create()
    cfg = defaults()
    cfg["train"].update(epochs=1000)  # the caller cancels it
    cfg["device"]["target"] = "CPU"
    job = JobRunner(store).start(sid, "train", cfg)
    events = job / "events.jsonl"
    deadline = time.time() + 180
    while time.time() < deadline and not (events.exists() and '"phase":"steady"' in events.read_text()):
        time.sleep(0.2)  # a bench polling a real job, not a test
    return sid, job


def _tmux(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    if not SOCKET:
        raise RuntimeError("no private tmux socket set: this bench never talks to the default tmux server")
    return subprocess.run(["tmux", "-S", SOCKET[0]] + list(args), capture_output=True, text=True, check=check)


def _tmux_int(target: str, fmt: str) -> Optional[int]:
    out = _tmux("display", "-p", "-t", target, fmt).stdout.strip()
    return int(out) if out.isdigit() else None


def proc_cpu_s(pid: Optional[int]) -> float:
    """User + system CPU seconds of a process, from /proc/<pid>/stat (0 without a pid)."""
    if not pid:
        return 0.0
    with open("/proc/%d/stat" % pid) as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _settled(pid: int, below_pct: float = 30.0, limit_s: float = 15.0) -> None:
    """Wait until a UI has started and caught up (a 0.5 s sample under `below_pct`): following, not starting."""
    end = time.time() + limit_s
    while time.time() < end:
        c0 = proc_cpu_s(pid)
        time.sleep(0.5)
        if 100.0 * (proc_cpu_s(pid) - c0) / 0.5 < below_pct:
            return


def finished_copy(sessions: Path, sid: str, into: Path) -> None:
    """Copy the session and end its jobs (a `finished` line, exit.json): the same size, nothing arriving."""
    shutil.copytree(sessions / sid, into / sid)
    for job in (into / sid / "jobs").iterdir():
        events = job / "events.jsonl"
        if not events.exists():
            continue
        data = events.read_bytes()
        data = data[: data.rfind(b"\n") + 1]  # a torn last line is dropped, as a reader would wait for it
        last = json.loads(data[data.rfind(b"\n", 0, len(data) - 1) + 1 :])
        fin = {"v": 1, "seq": last["seq"] + 1, "t": last["t"] + 0.1, "type": "finished", "status": "ok", "error": None}
        events.write_bytes(data + (json.dumps(fin) + "\n").encode())
        (job / "exit.json").write_text(
            json.dumps({"returncode": 0, "signal": None, "duration_s": 1.0, "timed_out": False, "cancelled": False})
        )
        (job / "pids.json").unlink(missing_ok=True)


def _start_tui(name: str, tree: Path, sessions: Path, sid: str, ui_nice: int) -> Dict:
    # Not exec'd: tmux sends SIGCONT to a pane process that stops (server_child_stopped), so the UI
    # runs as the pane shell's child, whose stops tmux never sees.
    command = "cd %s && PYTHONPATH=%s %s -m workbench --sessions %s --set ui.nice=%d attach %s; true" % (
        tree,
        tree,
        sys.executable,
        sessions,
        ui_nice,
        sid,
    )
    target = "arm%d" % len(_tmux("list-sessions").stdout.splitlines())
    _tmux("new-session", "-d", "-s", target, "-x", "120", "-y", "36", command, check=True)
    shell = _tmux_int(target, "#{pane_pid}")
    pid = None
    for _ in range(50):
        children = Path("/proc/%d/task/%d/children" % (shell, shell)).read_text().split()
        if children:
            pid = int(children[0])
            break
        time.sleep(0.1)
    time.sleep(1)
    _tmux("send-keys", "-t", target, "3")
    _settled(pid)
    freezer = Freezer(pid, target)
    freezer.freeze()
    return {"name": name, "pid": pid, "target": target, "freezer": freezer}


def follow_training(
    windows: int, window_s: float, ui_nice: int, before_tree: Optional[Path], seed: Optional[int] = None
) -> Dict:
    """Run the windows; return every window's arm, times, UI and tmux CPU shares, and the job's images/s."""
    if not shutil.which("tmux"):
        return {"skipped": "tmux not installed"}
    seed = seed if seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    load_before = os.getloadavg()
    spans: List[Dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        sessions = Path(tmp) / "live"
        os.environ[LOCK_DIR_ENV] = str(Path(tmp) / "locks")  # device locks of this run's own: no other bench's job
        store = SessionStore(sessions)
        sid, job = start_steady_training(store)
        events = job / "events.jsonl"
        SOCKET[:] = [str(Path(tmp) / "tmux.sock")]  # a fresh server of this run's own: nothing to kill first
        arms: List[Dict] = []
        try:
            arms.append(_start_tui("this tree", ROOT, sessions, sid, ui_nice))
            if before_tree is not None:
                arms.append(_start_tui("before tree", before_tree.resolve(), sessions, sid, ui_nice))
            (Path(tmp) / "done").mkdir()
            finished_copy(sessions, sid, Path(tmp) / "done")
            arms.append(_start_tui("control: finished copy", ROOT, Path(tmp) / "done", sid, ui_nice))
            server = _tmux_int(arms[0]["target"], "#{pid}")
            # frozen, an arm, frozen, another arm, …: every following window has frozen neighbours; each cycle
            # takes the arms in a new random order, so no arm always follows the same one
            order: List[Optional[Dict]] = []
            while len(order) < windows:
                order += [a for arm in rng.sample(arms, len(arms)) for a in (None, arm)]
            for k in range(windows):
                arm = order[k]
                thawed_at, ui_thaw = time.time(), {a["name"]: proc_cpu_s(a["pid"]) for a in arms}
                if arm is not None:
                    arm["freezer"].thaw()
                    time.sleep(CATCH_UP_S)  # what arrived while it was frozen is read first, inside the window
                t0, tmux0 = time.time(), proc_cpu_s(server)
                ui0 = {a["name"]: proc_cpu_s(a["pid"]) for a in arms}
                time.sleep(window_s)
                t1 = time.time()
                ui1 = {a["name"]: proc_cpu_s(a["pid"]) for a in arms}
                tmux1 = proc_cpu_s(server)
                if arm is not None:
                    arm["freezer"].freeze()
                name = arm["name"] if arm is not None else FROZEN
                spans.append(
                    {
                        "arm": name,
                        "t0": t0,
                        "t1": t1,
                        "thawed_at": thawed_at,
                        "ui_cpu_pct": 100.0 * (ui1[arm["name"]] - ui_thaw[arm["name"]]) / (t1 - thawed_at)
                        if arm
                        else 100.0 * sum(ui1[n] - ui_thaw[n] for n in ui0) / (t1 - thawed_at),
                        "ui_cpu_pct_after_catch_up": 100.0 * (ui1[arm["name"]] - ui0[arm["name"]]) / (t1 - t0)
                        if arm
                        else 100.0 * sum(ui1[n] - ui0[n] for n in ui0) / (t1 - t0),
                        "tmux_cpu_pct": 100.0 * (tmux1 - tmux0) / (t1 - t0),
                    }
                )
        finally:
            for arm in arms:
                arm["freezer"].close()
            _tmux("kill-server")  # this run's own server, on its own socket
            JobRunner.cancel(job)
            JobRunner.wait(job, 60)
        steps = _steady_steps(events)
    for span in spans:
        inside = [s for s in steps if span["t0"] <= s[0] < span["t1"]]
        ms = sum(s[1] for s in inside)
        span["steps"] = len(inside)
        span["images_per_s"] = 1000.0 * sum(s[2] for s in inside) / ms if ms else 0.0
    return {
        "spans": spans,
        "ui_nice": ui_nice,
        "arms": [a["name"] for a in arms],
        "frozen_by": arms[0]["freezer"].method if arms else "",
        "seed": seed,
        "load_before": load_before,
    }


def _steady_steps(events: Path) -> List[tuple]:
    """(t, step_ms, batch_size) of every steady step, from `step` lines and batched `steps` lines."""
    out = []
    for line in open(events):
        if '"steady"' not in line:
            continue
        ev = json.loads(line)
        if ev.get("type") == "step":
            out.append((ev["t"], ev["step_ms"], ev["batch_size"]))
        elif ev.get("type") == "steps":
            times, phases, sizes = ev["step_ms"], ev.get("phase"), ev.get("batch_size")
            for i, ms in enumerate(times):
                phase = phases[i] if isinstance(phases, list) else phases
                size = sizes[i] if isinstance(sizes, list) else sizes
                if phase == "steady":
                    out.append((ev["t"], ms, size))
    return out


def _quartiles(values: List[float], fmt: str = "%.1f") -> str:
    if not values:
        return "—"
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) >= 2 else [values[0]] * 3
    return (fmt + " (" + fmt + "–" + fmt + ")") % (q[1], q[0], q[2])


def _ratios(spans: List[Dict], arm: str) -> List[float]:
    """Each of the arm's windows' images/s over the mean of its two frozen neighbours."""
    out = []
    for i, s in enumerate(spans):
        if s["arm"] == arm and 0 < i < len(spans) - 1:
            base = statistics.mean([spans[i - 1]["images_per_s"], spans[i + 1]["images_per_s"]])
            if base and s["images_per_s"]:
                out.append(s["images_per_s"] / base)
    return out


def print_following(t: Dict) -> int:
    """The per-window table: UI CPU share median (quartiles), tmux share, images/s ratio, for every arm and the floor."""
    if "skipped" in t:
        print("training comparison skipped: %s" % t["skipped"])
        return 0
    spans = t["spans"]
    print(
        "\n| %g-s windows, one training run, ui.nice=%d | n | UI CPU %% of a core from the thaw (catch-up "
        "included), median (quartiles) | mean | after the catch-up only | tmux server %% | images/s ratio to frozen "
        "neighbours, median (quartiles) |" % (round(spans[0]["t1"] - spans[0]["t0"], 1), t["ui_nice"])
    )
    print("|---|---|---|---|---|---|---|")
    for arm in t["arms"] + [FROZEN]:
        mine = [s for s in spans if s["arm"] == arm]
        if not mine:  # fewer windows than arms
            print("| %s | 0 | | | | | |" % arm)
            continue
        label = "every TUI frozen (floor)" if arm == FROZEN else arm + " following"
        cpu = [s["ui_cpu_pct"] for s in mine]
        print(
            "| %s | %d | %s | %.1f | %s | %s | %s |"
            % (
                label,
                len(mine),
                _quartiles(cpu),
                statistics.mean(cpu),
                _quartiles([s["ui_cpu_pct_after_catch_up"] for s in mine]),
                _quartiles([s["tmux_cpu_pct"] for s in mine]),
                "" if arm == FROZEN else _quartiles(_ratios(spans, arm), "%.3f"),
            )
        )
    frozen = [s["images_per_s"] for s in spans if s["arm"] == FROZEN and s["images_per_s"]]
    print(
        "\nfrozen by %s; arm order seed %d; steady images/s with every TUI frozen: mean %.0f; "
        "load average before: %s, at the end: %s"
        % (
            t["frozen_by"],
            t["seed"],
            statistics.mean(frozen) if frozen else 0.0,
            " ".join("%.2f" % x for x in t["load_before"]),
            " ".join("%.2f" % x for x in os.getloadavg()),
        )
    )
    return 0
