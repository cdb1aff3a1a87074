"""`watch` (follow) replays a long events file a block at a time: its memory does not grow with the file."""

from __future__ import annotations

import hashlib

from workbench.cli import main as cli
from workbench.events.files import EventReader
from workbench.events.protocol import encode
from workbench.system.atomic import write_json


class Sink:
    """A stream that keeps only a hash and a count of what was written (a StringIO would hold it all)."""

    def __init__(self) -> None:
        self.sha, self.lines = hashlib.sha256(), 0

    def write(self, text: str) -> None:
        self.sha.update(text.encode("utf-8"))
        self.lines += text.count("\n")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _job(tmp_path, n: int):
    job = tmp_path / "train-001"
    job.mkdir()
    lines = [
        encode({"v": 1, "seq": i, "t": 1.0 + i, "type": "step", "epoch": 1, "step": i, "loss": 0.5, "step_ms": 2.0})
        for i in range(n)
    ]
    lines.append(encode({"v": 1, "seq": n, "t": 2.0 + n, "type": "finished", "status": "ok", "error": None}))
    text = "".join(lines)
    (job / "events.jsonl").write_text(text)
    write_json(job / "exit.json", {"returncode": 0, "signal": None, "duration_s": 1.0})
    return job, text


def test_watch_json_replays_every_line_holding_one_block(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "FOLLOW_BLOCK_BYTES", 64 << 10)
    job, text = _job(tmp_path, 60000)  # about 5 MB of lines
    assert len(text) > 50 * cli.FOLLOW_BLOCK_BYTES
    held = []  # the bytes of lines each read handed over at once
    read_lines = EventReader.read_lines

    def spy(self, max_bytes=-1):
        lines = read_lines(self, max_bytes)
        held.append(sum(len(line) + 1 for line in lines))
        return lines

    monkeypatch.setattr(EventReader, "read_lines", spy)
    sink = Sink()
    assert cli.follow(job, out_json=True, stream=sink, poll_s=0.0) == 0
    assert sink.lines == 60001 and sink.sha.hexdigest() == hashlib.sha256(text.encode("utf-8")).hexdigest()
    # Reading the whole file at once held all of it (and a bytes object per line); now one block at a time
    # (plus the line the previous block cut).
    longest = max(len(line) for line in text.splitlines(True))
    assert max(held) <= cli.FOLLOW_BLOCK_BYTES + longest and len(held) > 50, (max(held), len(held))


def test_watch_text_reads_the_same_lines_by_blocks(tmp_path, monkeypatch):
    job, text = _job(tmp_path, 3000)
    whole = Sink()
    assert cli.follow(job, out_json=False, stream=whole, poll_s=0.0, verbose_steps=1) == 0
    monkeypatch.setattr(cli, "FOLLOW_BLOCK_BYTES", 1000)  # blocks that cut lines everywhere
    by_blocks = Sink()
    assert cli.follow(job, out_json=False, stream=by_blocks, poll_s=0.0, verbose_steps=1) == 0
    assert whole.lines > 3000 and (by_blocks.lines, by_blocks.sha.digest()) == (whole.lines, whole.sha.digest())
