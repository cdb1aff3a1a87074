"""The UI process must never import MindSpore: checked in a fresh interpreter."""

import json
import subprocess
import sys

SCREENS = ["screens.environment", "screens.data", "screens.training", "screens.alignment",
           "screens.export", "screens.session"]


def test_app_and_screens_do_not_import_mindspore():
    code = (
        "import sys, json, importlib\n"
        "import workbench.app, workbench.cli\n"
        "for m in %r: importlib.import_module(m)\n"
        "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in ('mindspore', 'jobs'))))\n"
    ) % (SCREENS,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_jobs_kit_does_not_import_ui():
    code = ("import sys, json\nimport workbench.jobkit, workbench.protocol, workbench.metrics\n"
            "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'rich', 'yaml'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_first_screen_starts_without_numpy():
    """numpy costs ~0.15 s of start-up: the UI imports it when a preview or an export needs it."""
    code = ("import sys, json\nimport workbench.app, workbench.cli, screens.environment\n"
            "print(json.dumps('numpy' in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) is False
