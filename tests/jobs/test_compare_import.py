"""Compare and import end to end: real tiny trainings on the official data, a real export, a real import.

One session trains twice (only train.lr differs) and tests each run; `compare` must list exactly
train.lr and give a verdict. The session is exported and imported into another sessions root,
where one of its runs is compared with a local run and its checkpoint is tested (re-verified first).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.events import assert_events_valid
from workbench.events.protocol import Evidence, read_all
from workbench.record.importing import verify_record

pytestmark = [pytest.mark.requires_mindspore, pytest.mark.slow]

TINY = ["train.train_limit=2000", "train.val_limit=500", "train.epochs=2", "device.target=CPU"]
TIMEOUT_S = 180
LOCKS = {}  # MS_WORKBENCH_LOCK_DIR of this module's jobs: the module fixture runs before the per-test one


def run_job(root: Path, kind: str, sid: str = "", *sets: str, again: bool = False) -> Path:
    """`ms-workbench run KIND` in the session (a new one without sid); the job's folder.

    again: a second evaluation of the session's test set, asked for explicitly (`--test-set-again`)."""
    args = (
        ["run", kind, "--sessions", root]
        + (["--session", sid] if sid else [])
        + (["--test-set-again"] if again else [])
    )
    for item in sets:
        args += ["--set", item]
    proc = run_cli(*args, timeout=TIMEOUT_S, env=LOCKS)
    found = re.search(r"job \S+ in session (\S+): (\S+)", proc.stderr)
    assert found, proc.stderr
    return Path(found.group(2))


def finished(job: Path) -> dict:
    return [e for e in read_all(str(job / "events.jsonl")) if e["type"] == "finished"][-1]


def checks(job: Path, cid: str) -> list:
    return [e for e in read_all(str(job / "events.jsonl")) if e["type"] == "check" and e["id"] == cid]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Session with train-001 (lr 0.001), train-002 (lr 0.01), each tested once (the second use of the test set
    asked for explicitly: it is what compare must then warn about)."""
    root = tmp_path_factory.mktemp("compare") / "sessions"
    LOCKS["MS_WORKBENCH_LOCK_DIR"] = str(root.parent / "locks")  # never the machine's: other tests run jobs too
    first = run_job(root, "train", "", *TINY)
    sid = first.parent.parent.name
    second = run_job(root, "train", sid, *(TINY + ["train.lr=0.01"]))
    for n, job in enumerate((first, second)):
        assert finished(job)["status"] == "ok", (job / "stderr.log").read_text()[-2000:]
        tested = run_job(root, "test", sid, "test.from=%s" % job.name, "device.target=CPU", again=n > 0)
        assert finished(tested)["status"] == "ok", finished(tested)
    yield root, sid
    for job_dir in sorted(root.parent.glob("*/*/jobs/*")):
        assert_events_valid(job_dir)


def test_compare_json_lists_exactly_the_learning_rate_and_gives_a_verdict(trained, tmp_path):
    root, sid = trained
    proc = run_cli(
        "compare",
        "%s/train-001" % sid,
        "%s/train-002" % sid,
        "--json",
        "--sessions",
        root,
        "--out",
        tmp_path / "out",
        timeout=60,
    )
    result = json.loads(proc.stdout)
    assert [d["key"] for d in result["config_diff"]] == ["train.lr"]
    assert [r["epoch"] for r in result["epochs"]] == [1, 2]
    for row in result["epochs"]:
        for name in ("train_loss", "val_accuracy", "val_macro_f1"):
            cell = row[name]
            assert cell["delta"] == pytest.approx(cell["b"] - cell["a"])
    assert result["verdict"]["status"] in (Evidence.PASS, Evidence.FAIL)
    assert proc.returncode == (0 if result["verdict"]["status"] == Evidence.PASS else 1)
    assert result["test"]["a"]["evaluations"] == 1 and result["test"]["b"]["evaluations"] == 1
    assert (tmp_path / "out" / "loss.svg").read_text().count("<polyline") == 2

    tight = run_cli(
        "compare",
        "%s/train-001" % sid,
        "%s/train-002" % sid,
        "--json",
        "--sessions",
        root,
        "--set",
        "compare.max_final_loss_rel_delta=0",
        "--set",
        "compare.max_macro_f1_delta=1",
        "--set",
        "compare.max_class_f1_delta=1",
        timeout=60,
    )
    verdict = json.loads(tight.stdout)["verdict"]
    assert tight.returncode == 1 and verdict["status"] == Evidence.FAIL
    assert verdict["decided_by"] == ["final train loss |B - A| / |A|"]
    assert "> 0 (compare.max_final_loss_rel_delta)" in verdict["summary"]


def test_export_import_compare_and_reuse_elsewhere(trained, tmp_path):
    root, sid = trained
    exported = run_cli("export", sid, "--no-screenshots", "--sessions", root, timeout=120)
    assert exported.returncode == 0, exported.stderr
    archive = root / sid / "export" / ("%s.tar.gz" % sid)

    # A flipped byte in a checkpoint of the archive: refused, nothing added.
    other = tmp_path / "board" / "sessions"
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(str(archive)) as tin, tarfile.open(str(bad), "w:gz") as tout:
        for info in tin.getmembers():
            data = tin.extractfile(info).read() if info.isfile() else None
            if info.name.endswith("train-002/artifacts/best.ckpt"):
                data = data[:-1] + bytes([data[-1] ^ 1])
            tout.addfile(info, io.BytesIO(data) if data is not None else None)
    refused = run_cli("import", bad, "--sessions", other)
    assert refused.returncode == 1 and "jobs/train-002/artifacts/best.ckpt: SHA-256" in refused.stderr
    assert not other.exists() or not any(other.iterdir())

    done = run_cli("import", archive, "--sessions", other)
    assert done.returncode == 0 and done.stdout.startswith("imported %s" % sid), done.stderr
    assert run_cli("import", archive, "--sessions", other).stdout.startswith("already imported")

    local = run_job(other, "train", "", *TINY)
    assert finished(local)["status"] == "ok"
    cmp_proc = run_cli(
        "compare",
        "%s/train-001" % sid,
        "%s/%s" % (local.parent.parent.name, local.name),
        "--json",
        "--sessions",
        other,
        timeout=60,
    )
    result = json.loads(cmp_proc.stdout)
    assert result["a"]["imported"] and not result["b"]["imported"]
    assert result["config_diff"] == [] or all(not d["training"] for d in result["config_diff"])
    assert result["test"]["a"]["evaluations"] == 1  # the imported run's test came with it
    assert (
        result["verdict"]["status"] == Evidence.NOT_RUN
        and "B (train-001) has no test evaluation" in result["verdict"]["summary"]
    )

    # The imported checkpoint is re-verified before a test job uses it, and refused once changed.
    lsid = local.parent.parent.name
    tested = run_job(other, "test", lsid, "test.from=%s/train-002" % sid, "device.target=CPU")
    assert finished(tested)["status"] == "ok", finished(tested)
    assert checks(tested, "imported-checkpoint")[0]["status"] == Evidence.PASS
    counted = checks(tested, "test-evaluations")[0]  # the board's evaluation came with the record: this is the 2nd
    assert counted["evidence"]["count"] == 2 and "imported-evaluations" in counted["evidence"]["file"]
    assert verify_record(other / sid)["files"] > 0  # the imported record itself is untouched
    ckpt = other / sid / "jobs" / "train-002" / "artifacts" / "best.ckpt"
    ckpt.chmod(0o644)
    data = bytearray(ckpt.read_bytes())
    data[len(data) // 2] ^= 1
    ckpt.write_bytes(bytes(data))
    again = run_job(other, "test", lsid, "test.from=%s/train-002" % sid, "device.target=CPU", again=True)
    fin = finished(again)
    assert fin["status"] == "failed" and fin["error"]["type"] == "CheckpointMismatch"
    assert checks(again, "imported-checkpoint")[0]["status"] == Evidence.FAIL
    for kind, key in (("export", "export.from"), ("align", "align.weights_from")):
        reused = run_job(other, kind, lsid, "%s=%s/train-002" % (key, sid), "device.target=CPU")
        fin = finished(reused)
        assert fin["status"] == "failed" and fin["error"]["type"] == "CheckpointMismatch", (kind, fin)
        assert key in fin["error"]["message"] and "best.ckpt of imported session" in fin["error"]["message"]
    refused_run = run_cli("run", "drill", "--session", sid, "--sessions", other)
    assert refused_run.returncode == 2 and "imported record (read-only)" in refused_run.stderr
