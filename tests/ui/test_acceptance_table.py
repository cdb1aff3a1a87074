"""The Session screen's acceptance table: snapshots (all pass on CPU, one layer failed, device blocked) and the
screen showing the same computation as `ms-workbench accept`."""

from __future__ import annotations

import copy

import pytest
from rich.console import Console
from textual.app import App, ComposeResult

from screens.app import WorkbenchApp
from screens.widgets.acceptance_table import AcceptanceTable
from tests.support import variants
from tests.support.pilot import until
from tests.support.recorded import wait_ingested
from workbench.acceptance.about import about_session
from workbench.acceptance.verdict import evaluate
from workbench.config.layers import defaults
from workbench.fold.stream import fold_session
from workbench.session.store import SessionStore


class TableApp(App):
    """Only the acceptance table, fed one acceptance dict."""

    def __init__(self, acc):
        super().__init__()
        self.acc = acc

    def compose(self) -> ComposeResult:
        yield AcceptanceTable(id="acceptance")

    def on_mount(self) -> None:
        self.query_one(AcceptanceTable).show(self.acc)


def _all_pass(tmp_path):
    return variants.all_pass_on_cpu(tmp_path), variants.lenient()


def _one_failed(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    variants.evaluate_test_again(session)
    return session, variants.lenient()


def _device_blocked(tmp_path):
    session = variants.all_pass_on_cpu(tmp_path)
    variants.retarget(session, "Ascend")
    variants.block_probes(session, "Ascend")
    return session, variants.lenient()


VARIANTS = {"all-pass-cpu": _all_pass, "task-failed": _one_failed, "device-blocked": _device_blocked}
VERDICTS = {
    "all-pass-cpu": ["observed-pass", "observed-pass", "not-run", "not-required"],
    "task-failed": ["observed-fail", "observed-pass", "not-run", "not-required"],
    "device-blocked": ["observed-pass", "observed-pass", "blocked", "not-required"],
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_snapshot(snap_compare, tmp_path, name):
    session, cfg = VARIANTS[name](tmp_path)
    acc = evaluate(fold_session(session), cfg, about=about_session(session))
    assert [lay["verdict"] for lay in acc["layers"]] == VERDICTS[name]
    assert snap_compare(TableApp(acc), terminal_size=(110, 14))


def _plain(widget) -> str:
    console = Console(width=max(widget.size.width, 40), color_system=None)
    with console.capture() as captured:
        console.print(widget.renderable if hasattr(widget, "renderable") else widget.content)
    return captured.get()


async def test_the_session_screen_opens_with_the_acceptance_accept_computes(tmp_path):
    session, acc_cfg = _device_blocked(tmp_path)
    cfg = copy.deepcopy(defaults())
    cfg["acceptance"] = acc_cfg
    expected = evaluate(fold_session(session), acc_cfg, about=about_session(session))
    app = WorkbenchApp(SessionStore(tmp_path), session.name, cfg)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("6")
        await wait_ingested(pilot, app)
        table = app.screen.query_one("#acceptance", AcceptanceTable)
        await until(
            pilot,
            lambda: table.acceptance is not None and table.acceptance["layers"] == expected["layers"],
            what="the Session screen's acceptance to equal evaluate() on the session folder",
        )
        assert table.region.y <= 3  # the first thing under the header and the candidate line
        text = _plain(table)
        assert "BLOCKED" in text and "device" in text
        steps = app.screen.query_one("#next")  # a missing piece shows the key that produces it, runnable with Enter
        shown = [str(steps.get_option_at_index(i).prompt) for i in range(steps.option_count)]
        assert any("p on the Environment screen" in line for line in shown), shown
