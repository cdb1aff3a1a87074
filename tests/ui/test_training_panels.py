"""The Training screen's fixed-size panels: what they keep when the run outgrows them."""

from screens.training import epochs_table
from workbench.fold.record import SessionModel
from workbench.views.training import TrainingView


def _view(n_epochs, best_epoch):
    view = TrainingView(SessionModel())
    for e in range(1, n_epochs + 1):
        view.epochs.append(
            {
                "epoch": e,
                "train_loss": 1.0 / e,
                "epoch_s": 2.0,
                "is_best": e == best_epoch,
                "val": {"accuracy": 0.8, "macro_f1": 0.8},
            }
        )
    return view


def test_the_best_epoch_stays_on_top_when_it_scrolled_out_and_the_rest_is_counted():
    lines = epochs_table(_view(20, best_epoch=3), plain=False, rows=6).plain.split("\n")
    assert lines[0].startswith("epoch")
    shown = [line.split()[0] for line in lines[1:-1]]
    assert shown == ["3", "16", "17", "18", "19", "20"] and lines[1].rstrip().endswith("★")
    assert lines[-1] == "14 earlier epochs in the session record"


def test_a_short_run_is_shown_whole():
    lines = epochs_table(_view(2, best_epoch=2), plain=True, rows=6).plain.split("\n")
    assert [line.split()[0] for line in lines[1:]] == ["1", "2"]
    assert "no epoch ended yet" in epochs_table(_view(0, best_epoch=0), plain=False).plain
