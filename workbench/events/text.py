"""Plain one-line renderings of events, for the headless command line and logs."""

from __future__ import annotations

from typing import Any, Dict, Optional

from workbench.events.protocol import Evidence, type_problem
from workbench.events.steps import expand_steps, steps_span


def _num(value: Any, fmt: str = "%.4g") -> str:
    return fmt % value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def damage(ev: Dict[str, Any]) -> Optional[str]:
    """Why a JSON event line cannot be read (a field of the wrong type), or None when it can."""
    return None if ev.get("raw") else type_problem(ev)


def _has_verbose_step(ev: Dict[str, Any], every: int) -> bool:
    """True when a step line holds a step numbered a multiple of `every` (step 0 included), as expand_steps numbers them."""
    if ev.get("type") == "step":
        return True  # one step: the caller checks its number
    first, count = steps_span(ev)
    return count > 0 and (first <= 0 < first + count or (first + count - 1) // every > (first - 1) // every)


def _verbose_rows(ev: Dict[str, Any], every: int, rank: str) -> Optional[str]:
    """The lines of a batched line's steps numbered a multiple of `every`, as expand_steps would give them."""
    first, count = steps_span(ev)
    losses = ev["loss"] if isinstance(ev.get("loss"), list) else []
    times = ev["step_ms"] if isinstance(ev.get("step_ms"), list) else []
    lines = []
    for step in range(-(-first // every) * every, first + count, every):  # the multiples of `every` in the span
        i = step - first
        lines.append(
            "%sepoch %s step %s loss %s (%s ms)"
            % (
                rank,
                ev.get("epoch"),
                step,
                _num(losses[i] if i < len(losses) else None),
                _num(times[i] if i < len(times) else None, "%.2f"),
            )
        )
    return "\n".join(lines) or None


def format_event(ev: Dict[str, Any], verbose_steps: int = 0, folded: bool = False) -> Optional[str]:
    """One plain line for an event, or None for events too frequent to print (most steps).

    folded=True: the event already passed the fold's field check (JobRecord passes on no damaged
    line), so it is not checked again; the UI formats a whole backlog this way.
    """
    wrong = None if folded else damage(ev)
    if wrong is not None:
        return "damaged line skipped (seq %r): %s" % (ev.get("seq"), wrong)
    kind = ev.get("type")
    rank = "[rank %s] " % ev["rank"] if "rank" in ev else ""
    if kind == "started":
        dev = ev.get("device") or {}
        return "%sstarted %s pid %s on %s (requested %s; %s)" % (
            rank,
            ev.get("kind"),
            ev.get("pid"),
            dev.get("resolved"),
            dev.get("requested"),
            dev.get("why", ""),
        )
    if kind == "log":
        return "%s%s: %s" % (rank, ev.get("level", "info"), ev.get("message", ""))
    if kind == "check":
        line = "%scheck %-13s %s — %s" % (rank, ev.get("status"), ev.get("title"), ev.get("detail") or "")
        if ev.get("hint") and ev.get("status") in (Evidence.FAIL, Evidence.BLOCKED):
            line += "\n    hint: %s" % ev["hint"]
        return line
    if kind == "progress":
        return None
    if kind in ("step", "steps"):
        if not verbose_steps or not _has_verbose_step(ev, verbose_steps):
            return None  # most lines: decided without expanding a batch (the UI formats every line it reads)
        if kind == "steps":  # only the printed steps of a batch are looked up (a backlog holds a million)
            return _verbose_rows(ev, verbose_steps, rank)
        lines = []
        for one in expand_steps(ev):
            step = one.get("step") or 0
            if verbose_steps and step % verbose_steps == 0:
                lines.append(
                    "%sepoch %s step %s loss %s (%s ms)"
                    % (rank, one.get("epoch"), step, _num(one.get("loss")), _num(one.get("step_ms"), "%.2f"))
                )
        return "\n".join(lines) or None
    if kind == "device":
        power, card = ev.get("power_w"), ev.get("card_power_w")
        watts = "%s W" % _num(power, "%.1f")
        if card is not None:  # 310P: the card's power, never the chip's
            watts = (
                "card %s W" % _num(card, "%.1f") if power is None else "%s (card %s W)" % (watts, _num(card, "%.1f"))
            )
        return "%snpu %s chip %s: AI Core %s%%, memory %s/%s MB, %s °C, %s, %s" % (
            rank,
            ev.get("npu"),
            ev.get("chip"),
            _num(ev.get("ai_core_pct"), "%.0f"),
            _num(ev.get("mem_used_mb"), "%.0f"),
            _num(ev.get("mem_total_mb"), "%.0f"),
            _num(ev.get("temp_c"), "%.0f"),
            watts,
            ev.get("health"),
        )
    if kind == "monitor":
        return None  # sampled every few steps: the Training screen and the train-state check say what they show
    if kind == "loss_scale":
        return "%sloss scale %s at global step %s%s (%s skipped so far)" % (
            rank,
            _num(ev.get("scale")),
            ev.get("global_step"),
            ": overflow, update skipped, next %s" % _num(ev.get("next_scale")) if ev.get("overflow") else "",
            ev.get("skipped"),
        )
    if kind == "epoch":
        val = ev.get("val") or {}
        return "%sepoch %s: train loss %s, val acc %s, macro-F1 %s, %s s%s" % (
            rank,
            ev.get("epoch"),
            _num(ev.get("train_loss")),
            _num(val.get("accuracy")),
            _num(val.get("macro_f1")),
            _num(ev.get("epoch_s"), "%.2f"),
            " (best)" if ev.get("is_best") else "",
        )
    if kind == "perf":
        st = ev.get("steady") or {}
        return "%sperf: compile %s s, steady median %s ms, p95 %s ms, %s images/s (n=%s, sync: %s)" % (
            rank,
            _num(ev.get("first_step_s"), "%.3f"),
            _num(st.get("median_ms"), "%.2f"),
            _num(st.get("p95_ms"), "%.2f"),
            _num(st.get("images_per_s"), "%.0f"),
            st.get("n"),
            ev.get("sync"),
        )
    if kind == "tensor_diff":
        return "%sdiff %-28s %s max_abs %s max_rel %s" % (
            rank,
            ev.get("name"),
            "pass" if ev.get("passed") else "FAIL",
            _num(ev.get("max_abs")),
            _num(ev.get("max_rel")),
        )
    if kind == "artifact":
        return "%sartifact %s (%s, %s bytes, sha256 %s)" % (
            rank,
            ev.get("path"),
            ev.get("kind"),
            ev.get("bytes"),
            str(ev.get("sha256"))[:16],
        )
    if kind == "result":
        return "%sresult recorded" % rank
    if kind == "finished":
        err = ev.get("error") or {}
        line = "%sfinished %s" % (rank, ev.get("status"))
        if err:
            line += ": %s: %s" % (err.get("type"), err.get("message"))
            if err.get("hint"):
                line += "\n    hint: %s" % err["hint"]
        return line
    return "%s%s event: %s" % (rank, kind, {k: v for k, v in ev.items() if k not in ("v", "seq", "t")})
