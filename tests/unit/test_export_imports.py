"""The export's process loads no numpy: the record needs the class names only, not the dataset code (0.1-0.2 s)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_export_command_and_the_record_load_without_numpy():
    code = (
        "import sys, workbench.cli.main, workbench.record.write, workbench.record.collect\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'mindspore')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=str(ROOT), capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
