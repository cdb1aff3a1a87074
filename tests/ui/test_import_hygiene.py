"""Import boundaries checked in a fresh interpreter: the UI never loads MindSpore, the core never loads the UI."""

import json
import subprocess
import sys

# Every module of a package, found by walking it (no hand-kept list); __main__ would run the CLI.
WALK = (
    "import pkgutil, importlib\n"
    "def walk(package):\n"
    "    pkg = importlib.import_module(package)\n"
    "    for info in pkgutil.walk_packages(pkg.__path__, package + '.'):\n"
    "        if not info.name.endswith('__main__'):\n"
    "            yield info.name\n"
)


def _run(code: str):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_app_and_screens_do_not_import_mindspore():
    code = WALK + (
        "import sys, json\n"
        "import workbench.cli.main\n"
        "names = list(walk('screens'))\n"
        "for m in names: importlib.import_module(m)\n"
        "print(json.dumps([len(names), sorted(k for k in sys.modules if k.split('.')[0] in ('mindspore', 'jobs'))]))\n"
    )
    count, loaded = _run(code)
    assert count >= 10  # the app, six screens, the widgets: the walk found them
    assert loaded == []


def test_the_core_does_not_import_the_ui():
    """Every workbench module but the entry point (workbench.cli.main) imports without textual, rich or screens."""
    code = WALK + (
        "import sys, json\n"
        "names = [m for m in walk('workbench') if m != 'workbench.cli.main']\n"
        "for m in names: importlib.import_module(m)\n"
        "print(json.dumps([len(names), sorted({k.split('.')[0] for k in sys.modules} & "
        "{'textual', 'rich', 'screens', 'jobs', 'mindspore'})]))\n"
    )
    count, loaded = _run(code)
    assert count >= 30
    assert loaded == []


def test_jobs_kit_does_not_import_ui():
    code = (
        "import sys, json\nimport workbench.jobkit.context, workbench.events.protocol, workbench.analysis.metrics\n"
        "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'rich', 'yaml'))))\n"
    )
    assert _run(code) == []


def test_the_first_screen_starts_without_numpy_or_mindspore():
    """numpy costs ~0.15 s of start-up: the UI imports it when a preview or an export needs it."""
    code = (
        "import asyncio, json, sys, tempfile\n"
        "from screens.app import WorkbenchApp\n"
        "from tests.support.pilot import settled\n"
        "from workbench.config.layers import defaults\n"
        "from workbench.session.store import SessionStore\n"
        "async def start():\n"
        "    app = WorkbenchApp(SessionStore(tempfile.mkdtemp()), None, defaults())\n"
        "    async with app.run_test(size=(120, 36)) as pilot:\n"
        "        await settled(pilot)\n"
        "        return type(app.screen).__name__\n"
        "shown = asyncio.run(start())\n"
        "print(json.dumps([shown, sorted({k.split('.')[0] for k in sys.modules} & {'numpy', 'mindspore'})]))\n"
    )
    shown, loaded = _run(code)
    assert shown == "EnvironmentScreen"
    assert loaded == []


def test_the_screens_import_without_numpy_until_an_image_is_drawn():
    """The record's picture child draws the six screens: numpy (~0.15 s) only when a Data preview shows an image."""
    code = WALK + (
        "import sys, json\n"
        "for m in walk('screens'): importlib.import_module(m)\n"
        "before = 'numpy' in sys.modules\n"
        "from screens.widgets.pixels import ascii_lines\n"
        "import numpy\n"
        "lines = ascii_lines(numpy.zeros((4, 3), dtype=numpy.uint8))\n"
        "print(json.dumps([before, lines]))\n"
    )
    before, lines = _run(code)
    assert before is False
    assert lines == ["   ", "   "]
