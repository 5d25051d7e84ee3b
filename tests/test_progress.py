"""Tests for course_utils.progress: a text progress line whose stored final state is machine-independent."""

from __future__ import annotations

import io
import re

import pytest

from course_utils.progress import TextProgress


def apply_carriage_returns(text: str) -> str:
    """What a notebook stores and nbval compares: each line's text after its last carriage return."""
    return re.sub(r"^.*\r(?=[^\n])", "", text, flags=re.MULTILINE)


def test_final_line_is_the_count_without_speed() -> None:
    out = io.StringIO()
    bar = TextProgress(5, desc="training", file=out, min_interval=0.0)
    for step in range(1, 6):
        bar.update(step, loss="0.123")
    bar.close()
    raw = out.getvalue()
    assert "steps/s" in raw and "loss 0.123" in raw  # shown while running
    assert raw.count("\n") == 1 and raw.endswith("\rtraining: 5/5 steps\n")
    assert apply_carriage_returns(raw) == "training: 5/5 steps\n"


def test_updates_are_rate_limited_and_close_is_idempotent() -> None:
    out = io.StringIO()
    bar = TextProgress(1000, file=out, min_interval=3600.0)
    for step in range(1, 1001):
        bar.update(step)
    bar.close()
    bar.close()
    assert out.getvalue() == "\rprogress: 0/1000 steps\rprogress: 1000/1000 steps\n"


def test_disabled_writes_nothing() -> None:
    out = io.StringIO()
    bar = TextProgress(3, file=out, enabled=False)
    bar.update(3)
    bar.close()
    assert out.getvalue() == ""


def test_bad_total() -> None:
    with pytest.raises(ValueError, match="total must be a positive int, got 0"):
        TextProgress(0)


def test_train_prints_the_final_line(capsys: pytest.CaptureFixture[str]) -> None:
    import torch
    from torch import nn

    from course_utils.training import TrainConfig, train

    model = nn.Linear(3, 4)
    x, y = torch.randn(2, 5, 3), torch.randint(0, 4, (2, 5))
    train(model, lambda step: (x, y), TrainConfig(steps=3, lr=1e-2, warmup=0), desc="fit")
    err = capsys.readouterr().err  # not a kernel: the line goes to stderr, like tqdm
    assert apply_carriage_returns(err) == "fit: 3/3 steps\n"
