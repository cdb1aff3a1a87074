"""A batched `steps` line (consecutive steps of one epoch in one line): its span, its rows, its expansion."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Tuple


def steps_span(ev: Dict[str, Any]) -> Tuple[int, int]:
    """A batched `steps` line's (first step number, number of steps): the longer of its loss and step_ms lists."""
    first = ev["first_step"] if type(ev.get("first_step")) is int else 0
    lists = [ev.get(k) for k in ("loss", "step_ms")]
    return first, max([len(x) for x in lists if isinstance(x, list)] or [0])


def step_rows(ev: Dict[str, Any]) -> Iterator[Tuple[int, int, Any, Any, Any, Any]]:
    """A batched `steps` line's steps as (index, step, loss, step_ms, batch_size, phase), without a dict per step."""
    losses = ev["loss"] if isinstance(ev.get("loss"), list) else []
    times = ev["step_ms"] if isinstance(ev.get("step_ms"), list) else []
    sizes: Any = ev.get("batch_size")  # a list (one a step) or one value for every step
    phases: Any = ev.get("phase")
    size_list, phase_list = isinstance(sizes, list), isinstance(phases, list)
    first, n = steps_span(ev)
    for i in range(n):
        yield (
            i,
            first + i,
            losses[i] if i < len(losses) else None,
            times[i] if i < len(times) else None,
            (sizes[i] if i < len(sizes) else None) if size_list else sizes,
            (phases[i] if i < len(phases) else None) if phase_list else phases,
        )


def as_step(ev: Dict[str, Any], i: int, number_: int, loss: Any, ms: Any, size: Any, phase: Any) -> Dict[str, Any]:
    """Step `i` of a batched line (one of step_rows) as the `step` event it stands for."""
    step = {"type": "step", "epoch": ev.get("epoch"), "step": number_, "loss": loss, "step_ms": ms, "batch_size": size}
    if phase is not None:
        step["phase"] = phase
    if type(ev.get("global_step")) is int:
        step["global_step"] = ev["global_step"] + i
    if "rank" in ev:
        step["rank"] = ev["rank"]
    return step


def expand_steps(ev: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A batched `steps` line as the `step` events it stands for (a `step` line as itself)."""
    if ev.get("type") != "steps":
        return [ev]
    return [as_step(ev, *row) for row in step_rows(ev)]
