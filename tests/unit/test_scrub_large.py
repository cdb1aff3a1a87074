"""The record's last masking pass over a large file (steps.csv of a long run) rewrites it only when it must."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.masking.scrub import Scrubber
from workbench.record.write import _scrub_large


def _rows(n: int) -> bytes:
    return b"".join(b"train-001,1,%d,0.5,2.0,64,,steady\n" % i for i in range(n))


def test_a_clean_large_file_is_left_as_it_is(tmp_path):
    path = tmp_path / "steps.csv"
    path.write_bytes(_rows(200000))  # several blocks
    os.utime(str(path), (1, 1))
    before = os.stat(str(path))
    _scrub_large(path, Scrubber(["hunter2secret"]))
    after = os.stat(str(path))
    assert (after.st_ino, after.st_mtime, after.st_size) == (before.st_ino, 1, before.st_size)
    assert not list(tmp_path.glob(".*tmp"))


def test_a_secret_late_in_a_large_file_is_masked_and_the_rest_kept(tmp_path):
    path = tmp_path / "steps.csv"
    head, tail = _rows(150000), _rows(1000)
    data = head + b"train-001,1,9,0.5,2.0,64,,hunter2secret\n" + tail
    path.write_bytes(data)
    scrubber = Scrubber(["hunter2secret"])
    _scrub_large(path, scrubber)
    got = path.read_bytes()
    assert got == scrubber.file("steps.csv", data)  # the same as masking it whole
    assert b"hunter2secret" not in got and got.startswith(head) and got.endswith(tail)
    assert not list(tmp_path.glob(".*tmp"))


def test_the_pass_in_two_goes_masks_what_was_rewritten_or_written_after_the_first(tmp_path):
    """The export passes what it wrote before its pictures, then the rest: a file rewritten since the first pass
    (through a new file, as every record file is) and the pictures' folder it left out are passed then."""
    from workbench.record.write import _scrub_tree
    from workbench.system.atomic import write_text

    secret = "hunter2secret"
    stage = tmp_path / "stage"
    (stage / "metrics").mkdir(parents=True)
    (stage / "screenshots").mkdir()
    write_text(stage / "metrics" / "kept.csv", "a,%s\n" % secret)
    write_text(stage / "metrics" / "again.csv", "clean\n")
    write_text(stage / "screenshots" / "training.svg", "<svg>%s</svg>\n" % secret)  # the child drawing meanwhile
    passed: list = []
    scrubber = Scrubber([secret])
    real = scrubber.file
    scrubber.file = lambda name, data: passed.append(name) or real(name, data)  # type: ignore[method-assign]
    done = _scrub_tree(stage, scrubber, skip_dir=stage / "screenshots")
    assert sorted(passed) == ["again.csv", "kept.csv"]
    assert secret in (stage / "screenshots" / "training.svg").read_text()  # left for the second pass
    write_text(stage / "metrics" / "again.csv", "now %s\n" % secret)  # rewritten after the first pass
    write_text(stage / "report.md", "said %s\n" % secret)
    passed.clear()
    _scrub_tree(stage, scrubber, done)
    assert sorted(passed) == ["again.csv", "report.md", "training.svg"]  # kept.csv, unchanged, not read again
    for path in stage.rglob("*"):
        assert not path.is_file() or secret not in path.read_text(), path


def test_each_picture_is_masked_while_the_next_is_drawn_and_not_read_again_after(tmp_path):
    """The export passes each picture as soon as it is saved (a rename), while the child draws the next; the last
    pass reads none of them again unless one was rewritten since."""
    import threading

    from workbench.fold.handoff import FoldedSession
    from workbench.record.write import _Pictures, _scrub_tree
    from workbench.system.atomic import write_text

    secret = "hunter2secret"
    stage = tmp_path / "stage"
    stage.mkdir()
    go_on = threading.Event()
    seen_while_drawing: list = []

    def shooter(out_dir, folded):
        out_dir.mkdir(parents=True)
        write_text(out_dir / "data.svg", "<svg>%s</svg>\n" % secret)
        go_on.wait(10)  # held until the export has passed the first picture
        write_text(out_dir / "training.svg", "<svg>%s</svg>\n" % secret)
        return {"files": ["data.svg", "training.svg"]}

    passed: list = []
    scrubber = Scrubber([secret])
    real = scrubber.file

    def counted(name, data):
        passed.append(name)
        if name == "data.svg":
            seen_while_drawing.append(shots.is_alive())
            go_on.set()
        return real(name, data)

    scrubber.file = counted  # type: ignore[method-assign]
    shots = _Pictures(shooter, stage, FoldedSession())
    done = shots.passing(scrubber, {})
    assert shots.result()["files"] == ["screenshots/data.svg", "screenshots/training.svg"]
    assert seen_while_drawing == [True]  # the first picture was passed before the drawing ended
    assert sorted(passed) == ["data.svg", "training.svg"]
    for path in (stage / "screenshots").iterdir():
        assert secret not in path.read_text(), path
    passed.clear()
    write_text(stage / "screenshots" / "training.svg", "<svg>again %s</svg>\n" % secret)  # rewritten since
    _scrub_tree(stage, scrubber, done)
    assert passed == ["training.svg"]
    assert secret not in (stage / "screenshots" / "training.svg").read_text()


def test_a_picture_saved_just_before_the_drawing_ended_is_passed_too(tmp_path):
    """The export looks once more after the child ended: a picture saved between its last look and the end (here:
    the whole drawing, done before the export first looks) still gets its pass before the last one."""
    from workbench.fold.handoff import FoldedSession
    from workbench.record.write import _Pictures
    from workbench.system.atomic import write_text

    secret = "hunter2secret"
    stage = tmp_path / "stage"
    stage.mkdir()

    def shooter(out_dir, folded):
        out_dir.mkdir(parents=True)
        write_text(out_dir / "session.svg", "<svg>%s</svg>\n" % secret)
        return {"files": ["session.svg"]}

    shots = _Pictures(shooter, stage, FoldedSession())
    shots.join()  # ended before the export looks
    done = shots.passing(Scrubber([secret]), {})
    assert [p.name for p in done] == ["session.svg"]
    assert secret not in (stage / "screenshots" / "session.svg").read_text()


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"train-001,",
                b"1,2,2.3229987621307373,3.29,64,,steady\n",
                b"\xff",
                b"\xef\xbf\xbd",
                b"=",
                b"S3cretValue",
                b"S3cret",
                b" ",
                b"token=",
                b"\xc3\xa9",
                b":",
            ]
        ),
        max_size=12,
    ).map(b"".join),
    st.sets(st.sampled_from(["S3cretValue", "steady\n1", "\ufffdS3cretValue", "train-001,1"]), max_size=2),
)
def test_a_text_file_byte_searched_is_what_its_text_gives(data, values):
    """Scrubber.file's byte-search shortcut (no rule character, no remembered value) returns what masking its
    decoded text returns, bad bytes and remembered values with U+FFFD included."""
    scrubber = Scrubber(values)
    text = data.decode("utf-8", "replace")
    clean = scrubber.text(text)
    assert scrubber.file("steps.csv", data) == (data if clean == text else clean.encode("utf-8"))
