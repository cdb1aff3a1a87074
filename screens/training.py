"""The Training screen: labelled run form, live curves, perf panel, epochs, confusion matrix, per-class, test result."""

from __future__ import annotations

import copy
import time
from statistics import fmean
from typing import Any, Dict, List, Optional, Tuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Select, Static

from screens.base import NARROW_COLUMNS, WorkbenchScreen
from screens.dialogs import ConfirmScreen
from screens.form import LabelledField, NumberInput, check_fields, field_value, show_value
from screens.training_panels import (
    EPOCH_ROWS,
    epochs_summary,
    epochs_table,
    layers_panel,
    loss_label,
    matrix_epoch,
    matrix_label,
    per_class_table,
    perf_panel,
    profile_table,
    rank_rows,
    step_label,
    test_line,
    weakest_shown,
)
from screens.widgets.confusion import ConfusionGrid
from screens.widgets.device_panel import DevicePanel
from screens.widgets.evidence import badge
from screens.widgets.panel import Panel
from screens.widgets.spark import Spark
from workbench.acceptance.testset import COST, describe, session_evaluations
from workbench.config.keys import get, nest
from workbench.config.layers import ConfigError, batch_problem, merge
from workbench.session import candidate
from workbench.views.chart import STEP_WINDOW
from workbench.views.training import TrainingView, form_layers_every

__all__ = ["TrainingScreen", "epochs_table", "rank_rows"]

LIVE_PERF_S = 1.0  # the live step-time figures before the first perf event change at most this often
COMPACT_ROWS = 30  # below this many rows (or NARROW_COLUMNS columns) one pane shows at a time
PANES = ("curves", "epochs", "confusion", "classes", "layers")
PANE_KEYS = "uemkl"  # the keys that show each pane (the bindings below; c is Compare)
# (label, config key, widget id): the run form's fields (rows: model mode precision device layers; epochs batch lr split)
FIELDS: List[Tuple[str, str, str]] = [
    ("model", "model.name", "f-model"),
    ("mode", "train.mode", "f-mode"),
    ("precision", "train.precision", "f-precision"),
    ("epochs", "train.epochs", "f-epochs"),
    ("batch size", "train.batch_size", "f-batch"),
    ("lr", "train.lr", "f-lr"),
    ("device", "device.target", "f-device"),
    ("split", "data.from", "f-split"),
    ("layers every", "train.monitor.every", "f-layers"),
]
OWN_SPLIT = "own"  # the split field's value for "the run makes its own split" (data.from unset)
SPLIT_EVERY_S = 1.0  # how often the split field's choices are compared with the session's data jobs


def asked(cfg: Dict[str, Any], key: str) -> Any:
    """A run's setting as the user asked for it: a decided device target gives back its request."""
    if key == "device.target":
        requested = get(cfg, "device.requested", None)
        if requested is not None:
            return requested
    if key == "data.from":
        return get(cfg, key, None) or OWN_SPLIT
    return get(cfg, key, None)


def split_options(splits: List[str], configured: Any) -> Tuple[List[Tuple[str, str]], str]:
    """The split field's options (the config's data.from, the ok data jobs newest first, own split) and its default."""
    options = [(jid, jid) for jid in splits]
    if configured and str(configured) not in splits:
        options.insert(0, (str(configured), str(configured)))
    options.append(("own split", OWN_SPLIT))
    return options, str(configured) if configured else (splits[0] if splits else OWN_SPLIT)


def _select(options, value, widget_id: str) -> Select:
    return Select([(o, o) for o in options], value=value, allow_blank=False, id=widget_id, compact=True)


class TrainingScreen(WorkbenchScreen):
    """Start a run and watch it: curves, perf, epochs, confusion matrix, per-class metrics and the test set."""

    view_name = "training"
    title_text = "Training"
    refusal: Optional[str] = None  # why the last start from this screen was refused, until the next start
    shows_candidate = True
    CSS_PATH = "training.tcss"
    DEFAULT_CLASSES = "pane-curves"  # from the start, not set in on_mount: that restyled the whole screen once more
    # Each action has a letter (fields unfocused) and a ctrl key that a text field never takes.
    BINDINGS = [
        Binding("s,ctrl+s", "start", "Start"),
        Binding("x,ctrl+o", "stop", "Stop"),
        Binding("t,ctrl+t", "test", "Test"),
        Binding("f", "freeze", "Freeze"),
        Binding("r", "resume", "Resume"),
        Binding("p", "profile", "Profile"),
        Binding("v,f2", "next_pane", "Pane"),
        Binding("b", "toggle_matrix", "Best/last", show=False),
        Binding("e", "pane('epochs')", "Epochs", show=False),
        Binding("m", "pane('confusion')", "Matrix", show=False),
        Binding("k", "pane('classes')", "Classes", show=False),
        Binding("u", "pane('curves')", "Curves", show=False),
        Binding("l", "pane('layers')", "Layers", show=False),
        Binding("c", "compare", "Compare"),
        Binding("n", "new_data", "New data", show=False),
    ]

    def compose_body(self) -> ComposeResult:
        cfg = self.wb_app.cfg
        with VerticalScroll(id="body"):
            # Two rows, so that every field and both buttons fit in 80 columns.
            with Horizontal(classes="form-row", id="form"):
                yield LabelledField("model", _select(("mlp", "cnn"), cfg["model"]["name"], "f-model"))
                yield LabelledField("mode", _select(("graph", "pynative"), cfg["train"]["mode"], "f-mode"))
                yield LabelledField(
                    "precision", _select(("fp32", "fp16", "amp-O1", "amp-O2"), cfg["train"]["precision"], "f-precision")
                )
                yield LabelledField(
                    "device", _select(("auto", "CPU", "GPU", "Ascend"), cfg["device"]["target"], "f-device")
                )
                self._layers_auto = form_layers_every(cfg, self.form_target(cfg["device"]["target"]))
                yield LabelledField(
                    "layers every",
                    NumberInput(str(self._layers_auto), "train.monitor.every", id="f-layers", compact=True),
                )
            with Horizontal(classes="form-row", id="form2"):
                for label, key, wid in FIELDS[3:6]:  # epochs, batch size, lr: letters refused as typed
                    yield LabelledField(label, NumberInput(str(get(cfg, key)), key, id=wid, compact=True))
                self._splits = self.data_splits()
                options, self._split_auto = split_options(self._splits, cfg["data"].get("from"))
                yield LabelledField(
                    "split", Select(options, value=self._split_auto, allow_blank=False, id="f-split", compact=True)
                )
                yield Button("Start ^s", id="start", variant="success", compact=True)
                yield Button("Stop ^o", id="stop", variant="error", compact=True)
            yield Static("", id="form-state")
            yield Static("", id="runline")
            yield Static("", id="error")
            yield Static("", id="testline")
            yield Static("", id="summary")
            yield Static("", id="panes")
            with Horizontal(id="charts"):
                with Vertical(id="curves"):
                    yield Static("loss", id="loss-label", classes="chart-label")
                    yield Spark(id="loss", summary=fmean)
                    yield Static("step ms", id="step-label", classes="chart-label")
                    yield Spark(id="steps")
                    yield DevicePanel(id="device-panel")
                yield Panel("", id="perf")
            with Horizontal(id="tables"):
                yield Panel(epochs_table(self.view, False), id="epochs")
                with Vertical(id="matrix-box"):
                    yield Static("", id="matrix-label")
                    yield ConfusionGrid(id="matrix")
                    yield Panel("", id="perclass")
            yield Static("", id="layers")
            yield Static("", id="profile")

    def on_mount(self) -> None:
        self.pane = "curves"
        self.matrix_best = False  # the screen shows the last epoch's matrix; b shows the best one's
        self.form_from: Optional[str] = None  # the run whose settings the form was filled with
        self.form_base: Dict[str, Any] = {}
        self.call_after_refresh(self.refresh_splits)  # a Select takes options once its overlay is mounted
        self.set_interval(SPLIT_EVERY_S, self.refresh_splits)

    # ----- layout ------------------------------------------------------------------------

    def on_resize(self, event) -> None:
        """One pane at a time on small terminals (80×24), everything side by side on large ones."""
        compact = event.size.width < NARROW_COLUMNS or event.size.height < COMPACT_ROWS
        self.set_class(compact, "compact")
        self._show_panes()

    def action_next_pane(self) -> None:
        """Cycle Curves → Epochs → Confusion → Classes (small terminals)."""
        self.action_pane(PANES[(PANES.index(self.pane) + 1) % len(PANES)])

    def action_pane(self, pane: str) -> None:
        """Show one pane (small terminals)."""
        for name in PANES:
            self.set_class(name == pane, "pane-" + name)
        self.pane = pane
        self._show_panes()

    def _show_panes(self) -> None:
        tabs = Text(no_wrap=True, overflow="ellipsis")
        if self.has_class("compact"):
            for name, key in zip(PANES, PANE_KEYS):
                tabs.append(" %s %s " % (key, name.capitalize()), style="reverse bold" if name == self.pane else "")
            tabs.append("  v/F2 next", style="dim")
        self.query_one("#panes", Static).update(tabs)
        self.invalidate()

    def action_toggle_matrix(self) -> None:
        """Show the best epoch's confusion matrix, or the last one's."""
        self.matrix_best = not self.matrix_best
        self.forget("epochs")
        self.invalidate()
        self.maybe_refresh()

    # ----- the form ----------------------------------------------------------------------

    def form_fields(self) -> List[Tuple[str, str, Any]]:
        """(label, config key, typed value) of every field (the split field's "own split" is data.from unset)."""
        out = []
        for label, key, wid in FIELDS:
            value = field_value(self.query_one("#" + wid), key)
            out.append((label, key, None if value == OWN_SPLIT else value))
        return out

    def data_splits(self) -> List[str]:
        """The session's data jobs that ended ok, newest first: the splits a run can reuse (data.from)."""
        jobs = [job for job in self.wb_app.tracker.ordered() if job.kind == "data" and job.status.state == "ok"]
        return [job.jid for job in reversed(jobs)]

    async def refold(self) -> None:
        await super().refold()
        self._split_picked = False
        self.refresh_splits()

    def refresh_splits(self) -> None:
        """Offer the session's ok data jobs in the split field; the newest is chosen until someone picks."""
        splits = self.data_splits()
        select = self.query_one("#f-split", Select)
        if splits == getattr(self, "_splits", None) or not select.query("SelectOverlay"):
            return  # unchanged, or the field is not ready for options yet (the next tick tries again)
        self._splits = splits
        current = select.value
        options, default = split_options(splits, self.wb_app.cfg["data"].get("from"))
        keep = getattr(self, "_split_picked", False) and current in [v for _, v in options]
        self._split_auto = current if keep and isinstance(current, str) else default
        with self.prevent(Select.Changed):
            select.set_options(options)
            select.value = self._split_auto
        self._form_state()

    def form_overrides(self) -> Dict[str, Any]:
        """The run form as config overrides."""
        return nest([(key, value) for _, key, value in self.form_fields()])

    def fill_form(self, jid: str, cfg: Dict[str, Any]) -> None:
        """Put a run's settings into the form, and remember them to mark edits away from that run.

        The device field gets what the run asked for (`auto` stays `auto`), never what it resolved to.
        """
        with self.prevent(Input.Changed, Select.Changed):
            for _, key, wid in FIELDS:
                value = asked(cfg, key)
                if value is not None:
                    show_value(self.query_one("#" + wid), value)
        self.form_from = jid
        self.form_base = {key: value for _, key, value in self.form_fields()}
        self._form_state()

    def form_problems(self) -> List[str]:
        """What the config's rules say of the form as it stands: each field's, then the batch against the split."""
        problems = check_fields(self.form_fields())
        if not problems:
            cfg = copy.deepcopy(self.wb_app.cfg)
            try:
                merge(cfg, self.form_overrides(), "the training form")
            except ConfigError as exc:
                return [str(exc)]
            why = batch_problem(cfg)
            if why is not None:
                problems.append(why)
        return problems

    def _form_state(self, refused: str = "") -> None:
        """Say what is wrong with the form as typed, or whose settings it holds and which fields differ from them."""
        line = Text(no_wrap=True, overflow="ellipsis")
        problems = self.form_problems()
        if refused or problems:
            line.append("✗ " + "; ".join(([refused] if refused else []) + problems), style="bold red")
        elif self.form_from:
            edited = [
                (label, value, self.form_base.get(key))
                for label, key, value in self.form_fields()
                if value != self.form_base.get(key)
            ]
            if edited:
                line.append("EDITED ", style="bold black on yellow")
                line.append(
                    "; ".join(
                        "%s %s (%s ran %s)" % (label, value, self.form_from, base) for label, value, base in edited
                    )
                )
            else:
                line.append("form = the settings of %s" % self.form_from, style="dim")
        else:
            line.append("Tab moves between fields, Escape leaves a field, ctrl+s starts", style="dim")
        self.query_one("#form-state", Static).update(line)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._form_state()

    def on_number_input_refused(self, event: NumberInput.Refused) -> None:
        label = next((label for label, _, wid in FIELDS if wid == event.field.id), event.field.key)
        self._form_state("%s: %s" % (label, event.reason))

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "f-split" and event.value != getattr(self, "_split_auto", None):
            self._split_picked = True  # the user chose; the newest split no longer replaces the choice
        if event.select.id == "f-device":
            self.follow_device(event.value)
        self._form_state()

    def form_target(self, device: Any) -> Any:
        """The target a run of the form's device field would run on (`auto`: what the app decided for this machine)."""
        return self.wb_app.device["target"] if device == "auto" else device

    def follow_device(self, device: Any) -> None:
        """The layers field moves with the device (on for CPU, off for a GPU or NPU) until someone types into it."""
        layers = self.query_one("#f-layers", NumberInput)
        if layers.value.strip() != str(self._layers_auto):
            return  # typed by someone, or a run's settings: kept
        self._layers_auto = form_layers_every(self.wb_app.cfg, self.form_target(device))
        with self.prevent(Input.Changed):
            layers.value = str(self._layers_auto)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_start()
        elif event.button.id == "stop":
            self.action_stop()

    # ----- actions -----------------------------------------------------------------------

    def action_start(self, extra: Optional[Dict[str, Any]] = None) -> None:
        """Check the form with the config's rules, then start a training job from it."""
        problems = self.form_problems()
        error = self.query_one("#error", Static)
        if problems:
            error.update(Text("cannot start: " + "\n".join(problems), style="bold red"))
            error.display = True
            self.forget("error")
            return
        overrides = self.form_overrides()
        self.refusal = None  # a refusal of this start shows again below
        self.forget("error")
        if extra:
            overrides["train"].update(extra)
        self.wb_app.start_job("train", overrides)
        self.set_focus(None)  # the form was sent: one-letter keys act again, a later q quits instead of typing

    def action_profile(self) -> None:
        """Start a run that profiles 20 steady steps after warm-up."""
        self.action_start({"profile": {"steps": 20}})

    def action_stop(self) -> None:
        """Stop the followed training job after a yes: it saves a resumable state, which r resumes."""
        view = self.view
        if not (view.jid and view.state == "running"):
            self.app.notify("no running training run to stop", severity="warning")
            return
        jid = view.jid

        def go(confirmed: Optional[bool]) -> None:
            if confirmed:
                self.wb_app.cancel_job(jid)

        self.app.push_screen(ConfirmScreen(stop_question(view), yes="Stop run"), go)

    def action_resume(self) -> None:
        """Resume the followed run from the state it saved when it was cancelled or failed (a new train job)."""
        view = self.view
        state_dir = self._state_dir(view.jid)
        if not view.jid or view.state in ("running", "ok", ""):
            self.app.notify(
                "resume takes a cancelled or failed run; %s is %s"
                % (view.jid or "no run", view.state or "not started"),
                severity="warning",
            )
            return
        if state_dir is None:
            self.app.notify(
                "%s saved no state to resume from (artifacts/state.json + state.ckpt)" % view.jid,
                severity="warning",
                timeout=8,
            )
            return
        self.wb_app.start_job("train", resume_overrides(view.cfg, view.jid))

    def _state_dir(self, jid: Optional[str]):
        """The run's folder when it saved a resumable state, else None."""
        job = self.wb_app.tracker.jobs.get(jid or "")
        if job is None:
            return None
        art = job.dir / "artifacts"
        return job.dir if (art / "state.json").is_file() and (art / "state.ckpt").is_file() else None

    def show_refusal(self, text: str) -> None:
        """A start that was refused: its reason on the screen's error line (the followed run goes on)."""
        self.refusal = text  # kept until the next start: a redraw of the error line shows it again
        error = self.query_one("#error", Static)
        error.update(Text(text, style="bold red"))
        error.display = True
        self.forget("error")

    def action_test(self) -> None:
        """Evaluate the followed run's best checkpoint on the test set (counted); ask first if the run did not end ok."""
        view = self.view
        if not view.jid:
            self.app.notify("no training run to test", severity="warning")
            return

        def go(confirmed: Optional[bool] = True) -> None:
            if confirmed:
                self.wb_app.start_job("test", {"test": {"from": view.jid}})

        worries = []
        if view.state != "ok":
            worries.append(
                "%s did not end ok (%s): its best checkpoint is not necessarily the run's result."
                % (view.jid, view.status or view.state or "running")
            )
        spent = session_evaluations(self.wb_app.store.root / self.wb_app.sid) if self.wb_app.sid else []
        if spent:
            worries.append(
                "The test set of this session is spent: %s. %s."
                % (", ".join(describe(e) for e in spent), COST[0].upper() + COST[1:])
            )
        if worries:
            question = " ".join(worries) + " Evaluate %s on the test set anyway?" % view.jid
            self.app.push_screen(ConfirmScreen(question, yes="Evaluate"), go)
            return
        go()

    def action_freeze(self) -> None:
        """Freeze the shown run's best checkpoint as the session's candidate, after saying what that does."""
        view = self.view
        if not view.jid or not self.wb_app.sid:
            self.app.notify("no training run to freeze", severity="warning")
            return
        session_dir = self.wb_app.store.root / self.wb_app.sid
        before = candidate.current(session_dir)

        def go(confirmed: Optional[bool] = True) -> None:
            if not confirmed:
                return
            try:
                lineage = candidate.from_run(session_dir, session_dir / "jobs" / view.jid)
                entry = candidate.freeze(session_dir, lineage, "chosen on the Training screen" if before else "")
            except candidate.FreezeError as exc:
                self.app.notify("freeze refused: %s" % exc, severity="error", timeout=10)
                return
            self.app.notify("frozen candidate #%d: %s" % (entry.n, entry.label()), timeout=8)

        replaces = (
            " It replaces candidate #%d (%s); that freeze stays recorded." % (before.n, before.label())
            if before
            else ""
        )
        self.app.push_screen(
            ConfirmScreen(
                "Freeze %s's best checkpoint as this session's candidate? Test, align and export then take it when "
                "no source is given, and the acceptance verdict is about it only.%s" % (view.jid, replaces),
                yes="Freeze",
            ),
            go,
        )

    # ----- drawing -----------------------------------------------------------------------

    def action_new_data(self) -> None:
        """Overlay the frozen candidate's evaluation on new-distribution data (the newest shift job)."""
        from screens.shift_overlay import ShiftOverlay

        self.app.push_screen(ShiftOverlay())

    def action_compare(self) -> None:
        """Overlay a second run (this session's or an imported one) on the followed one."""
        from screens.compare_overlay import open_compare

        open_compare(self)

    def forget(self, *parts: str) -> None:
        """The named parts are drawn again at the next redraw, even if their inputs did not change."""
        keys = self.__dict__.get("_keys", {})
        for part in parts:
            keys.pop(part, None)

    def _changed(self, part: str, key: Any) -> bool:
        """True when a part's inputs differ from its last drawing (redraw only what changed)."""
        keys = self.__dict__.setdefault("_keys", {})
        if keys.get(part) == key:
            return False
        keys[part] = key
        return True

    def shown_run(self) -> Optional[str]:
        return self.view.jid

    def render_view(self, view: TrainingView) -> None:
        plain = self.wb_app.low_bandwidth
        if view.jid and view.jid != self.form_from and view.cfg:
            self.fill_form(view.jid, view.cfg)
        eta = view.eta_s()
        if self._changed(
            "runline", (view.jid, id(view.started), view.status, view.state, id(view.progress), int(eta or 0))
        ):  # started: the screen may draw before it is read
            self.query_one("#runline", Static).update(self._runline(view, eta), layout=False)  # fixed size: no reflow
        if self._changed("testline", (view.jid, len(view.tests))):
            self.query_one("#testline", Static).update(test_line(view), layout=False)
        late = view.refused_after()
        if self._changed("error", (view.jid, id(view.error), view.state, late.jid if late else None)):
            self._error(view)
        if self._changed("curves", (view.jid, view.steps_seen)):
            shown = list(view.step_ms)[-STEP_WINDOW:]
            loss = self.query_one("#loss", Spark)
            loss.data = view.loss
            scale = view.loss_range()  # compile and warm-up points do not set the scale; those above it are marked
            loss.y_range = (scale.lo, scale.hi) if scale is not None and scale.scaled_from else None
            steps = self.query_one("#steps", Spark)
            steps.data = shown
            labels = (
                ("#loss-label", loss_label(view, scale)),
                ("#step-label", step_label(view.step_window(), steps.size.width)),
            )
            # a caption whose text did not change is not redrawn (the curves change more often than their captions)
            for wid, text in labels:
                if self._changed(wid, text):
                    self.query_one(wid, Static).update(text, layout=False)
        self.query_one(DevicePanel).show(view.device_samples, view.device_target)  # redraws only on a new sample
        perf_key = (
            view.jid,
            id(view.perf),
            plain,
            tuple((k, c.get("status")) for k, c in view.checks.items()),
            tuple(sorted(view.rank_step_ms.items())) if hasattr(view.rank_step_ms, "items") else None,
            None if view.perf else int(time.monotonic() / LIVE_PERF_S),
        )
        if self._changed("perf", perf_key):
            self.query_one("#perf", Panel).update(perf_panel(view, plain), layout=False)
        epochs = self.query_one("#epochs", Panel)
        rows = max(1, epochs.size.height - 2) if epochs.size.height else EPOCH_ROWS  # header and a note line
        if self._changed("epochs", (view.jid, len(view.epochs), plain, rows, self.matrix_best)):
            # Fixed-size panels updated without layout=True: a reflow repaints the whole screen.
            epochs.update(epochs_table(view, plain, rows), layout=False)
            self.query_one("#summary", Static).update(epochs_summary(view), layout=False)
            epoch = matrix_epoch(view, self.matrix_best)
            val = (epoch or {}).get("val") or {}
            per_class = val.get("per_class") or []
            weakest = weakest_shown(val)  # workbench.analysis.metrics' rule; no highlight when every class ties
            self.query_one("#matrix-label", Static).update(matrix_label(view, self.matrix_best), layout=False)
            self.query_one("#matrix", ConfusionGrid).show(
                val.get("confusion"), plain=plain, weakest=weakest, layout=False
            )
            self.query_one("#perclass", Panel).update(
                per_class_table(val, plain, weakest) if per_class else "", layout=False
            )
        st = view.train_state
        if self._changed("layers", (view.jid, st.count, len(view.loss_scale), id(view.overflow_origin), plain)):
            self.query_one("#layers", Static).update(layers_panel(view, plain))
        # view.result is a new {} on every read until the run writes one: key on the result itself, since an
        # update of this height-auto Static reflows the whole screen
        if self._changed("profile", (view.jid, id(view.result) if view.result else None)):
            prof = profile_table((view.result or {}).get("profile") or {})
            self.query_one("#profile", Static).update(prof if prof is not None else "")

    def _error(self, view: TrainingView) -> None:
        """What went wrong with the followed run (and how to resume it), or a later start that was refused."""
        text = Text()
        if self.refusal:
            text.append(self.refusal, style="bold red")
        late = view.refused_after()
        if late is not None:  # a start the supervisor refused after all: say why, keep following the run
            if text:
                text.append("\n")
            text.append("%s not started: %s — following %s" % (late.jid, late.label, view.jid), style="bold red")
        if view.error:
            message = str(view.error.get("message") or "").split("\n")[0]
            if text:
                text.append("\n")
            text.append(
                "%s: %s" % (view.error.get("type"), message[:240] + ("…" if len(message) > 240 else "")),
                style="bold red",
            )
            if view.error.get("hint"):
                text.append("\nhint: " + str(view.error["hint"]), style="yellow")
        if view.state in ("cancelled", "failed", "timed-out", "stalled") and self._state_dir(view.jid) is not None:
            text.append(("\n" if text else "") + "state saved: r resumes %s" % view.jid, style="yellow")
        error = self.query_one("#error", Static)
        error.display = bool(text)
        if text:
            error.update(text)

    def _runline(self, view: TrainingView, eta: Optional[float]) -> Text:
        if not view.jid:
            return Text("no training run yet — set the form and press s (ctrl+s in a field) to start", style="dim")
        started = view.started
        dev = started.get("device") or {}
        line = Text()  # wraps at word boundaries: two rows on narrow terminals
        line.append(view.jid + " ", style="bold")
        if ((view.cfg.get("data") or {}).get("source")) == "synthetic":
            line.append("SYNTHETIC DATA ", style="bold black on yellow")
        line.append_text(badge(view.state or "running"))
        line.append(" ")
        if view.status and view.state not in ("ok", "running", "failed") and ":" in view.status:
            line.append(view.status.split(":", 1)[-1].strip()[:60] + " ")
        prog = view.progress
        if prog:
            line.append(
                "%s  %s/%s %s" % (prog.get("phase", ""), prog.get("done"), prog.get("total"), prog.get("unit", ""))
            )
        if eta is not None and view.state == "running":
            line.append("  ETA %ds" % eta)
        line.append(
            "  on %s (asked %s) %s %s"
            % (
                dev.get("resolved", "?"),
                dev.get("requested", "?"),
                started.get("mode", ""),
                started.get("precision", ""),
            )
        )
        return line


def stop_question(view: TrainingView) -> str:
    """What stopping the followed run does, at the step it has reached (the job saves its state where it stops)."""
    prog = view.progress
    where = ""
    if type(prog.get("done")) is int and type(prog.get("total")) is int:
        where = " (last progress: step %d of %d)" % (prog["done"], prog["total"])
    return (
        "Stop %s%s? It saves its state at the step it stops on (the job's message names it); "
        "r on this screen then resumes it as a new run." % (view.jid, where)
    )


def resume_overrides(cfg: Dict[str, Any], jid: str) -> Dict[str, Any]:
    """A new train job that resumes `jid` from its saved state, with the run's own settings (device as asked)."""
    keep = {section: cfg[section] for section in ("model", "train", "data") if isinstance(cfg.get(section), dict)}
    out: Dict[str, Any] = {k: dict(v) for k, v in keep.items()}
    out.setdefault("train", {})["resume_from"] = jid
    device = cfg.get("device")
    if isinstance(device, dict):
        out["device"] = {"target": device.get("requested") or device.get("target"), "id": device.get("id", 0)}
    return out
