"""A job's stderr.log read by the Session screen and the disk-full diagnosis: bounded, never a FIFO or /dev/zero.

A recorded session may carry anything in place of stderr.log (tests/support/hostile.py): a symlink to /dev/zero
made the Session screen read without end (the test process grew to 24 GB and was killed), a FIFO blocks an open.
"""

from __future__ import annotations

import os

from screens.session import stderr_tail
from workbench.system.diskspace import ENOSPC_TAIL_BYTES, _enospc_in_log


def test_a_symlink_to_dev_zero_is_named_not_read(tmp_path):
    os.symlink("/dev/zero", str(tmp_path / "stderr.log"))
    assert stderr_tail(str(tmp_path / "stderr.log")) == "(%s is a character device, not a regular file)" % (
        tmp_path / "stderr.log"
    )
    assert _enospc_in_log(tmp_path) is None


def test_a_fifo_does_not_block(tmp_path):
    os.mkfifo(str(tmp_path / "stderr.log"))
    assert "not a regular file" in stderr_tail(str(tmp_path / "stderr.log"))
    assert _enospc_in_log(tmp_path) is None


def test_the_tail_is_the_last_lines_of_at_most_the_bytes_asked(tmp_path):
    path = tmp_path / "stderr.log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(10000)))
    tail = stderr_tail(str(path), max_bytes=100)
    assert len(tail.encode()) <= 100 and tail.endswith("line 9999\n") and tail.startswith("line ")
    assert stderr_tail(str(tmp_path / "missing.log")) == ""


def test_the_disk_full_diagnosis_finds_the_file_named_at_the_end(tmp_path):
    noise = b"x" * (ENOSPC_TAIL_BYTES * 2) + b"\n"
    (tmp_path / "stderr.log").write_bytes(noise + b"OSError: [Errno 28] No space left on device: '/data/ckpt.tmp'\n")
    assert _enospc_in_log(tmp_path) == "/data/ckpt.tmp"
