"""course_utils.training: masked cross-entropy by hand, the loop reduces loss on a tiny problem."""

from __future__ import annotations

import math
import time

import pytest
import torch
from torch import nn

from course_utils.data import PAD_ID, VOCAB_SIZE, random_batch
from course_utils.model import Transformer, TransformerConfig
from course_utils.training import Callback, StepsTo, TrainConfig, TrainHistory, masked_cross_entropy, train


def test_loss_ignores_pad_hand_checked():
    # two positions: one real target (id 1) with logits [0, log 3, 0] -> p = 3/5; one PAD position
    logits = torch.tensor([[[0.0, math.log(3.0), 0.0], [5.0, -5.0, 0.0]]])  # (1, 2, 3)
    targets = torch.tensor([[1, PAD_ID]])
    assert masked_cross_entropy(logits, targets).item() == pytest.approx(-math.log(3 / 5), rel=1e-6)
    # the PAD position's logits do not matter at all
    logits2 = logits.clone()
    logits2[0, 1] = torch.tensor([-9.0, 9.0, 1.0])
    assert masked_cross_entropy(logits2, targets).item() == pytest.approx(-math.log(3 / 5), rel=1e-6)


def test_label_smoothing_hand_checked():
    logits = torch.tensor([[[0.0, math.log(3.0), 0.0]]])
    logp = torch.log(torch.tensor([0.2, 0.6, 0.2]))
    eps = 0.1
    want = -((1 - eps) * logp[1] + eps * logp.mean())  # smoothed target: (1 - eps) one-hot + eps / V
    got = masked_cross_entropy(logits, torch.tensor([[1]]), label_smoothing=eps)
    assert got.item() == pytest.approx(want.item(), rel=1e-6)


def test_loss_errors():
    with pytest.raises(ValueError, match="must agree on B and T"):
        masked_cross_entropy(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="label_smoothing"):
        masked_cross_entropy(torch.zeros(1, 1, 5), torch.zeros(1, 1, dtype=torch.long), label_smoothing=1.5)


def test_train_reduces_loss_on_tiny_problem():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(VOCAB_SIZE, VOCAB_SIZE, d_model=32, n_heads=2, d_ff=64,
                                          n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, norm_first=True))
    g = torch.Generator().manual_seed(0)
    hist = train(model, lambda step: random_batch(32, 2, 4, g), TrainConfig(steps=60, lr=3e-3, warmup=5),
                 progress=False)
    assert isinstance(hist, TrainHistory) and len(hist.losses) == len(hist.lrs) == 60
    assert sum(hist.losses[-10:]) / 10 < 0.7 * sum(hist.losses[:10]) / 10
    assert hist.lrs[4] == pytest.approx(3e-3) and hist.lrs[-1] < 1e-5  # warm-up peak, cosine end
    assert not model.training and hist.seconds > 0
    assert len(hist.smoothed(10)) == 60


def test_train_bad_arguments():
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="model must be"):
        train("model", lambda s: None)
    with pytest.raises(TypeError, match="batch_fn must return"):
        train(model, lambda s: torch.zeros(1), TrainConfig(steps=2, warmup=0), progress=False)
    with pytest.raises(ValueError, match="optimizer"):
        train(model, lambda s: (torch.zeros(1, 2),) * 2, TrainConfig(steps=2, warmup=0, optimizer="sgd"))


def test_callback_after_step_sees_every_step_restores_train_mode_and_can_stop():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(5, 8), nn.Linear(8, 5))
    x = torch.randint(0, 5, (4, 3), generator=torch.Generator().manual_seed(0))  # ids 0-4; pad_id 5 never occurs
    seen, modes = [], []

    class Stop(Callback):
        def after_step(self, step, m, history):
            seen.append((step, len(history.losses)))
            modes.append(m.training)
            m.eval()  # an evaluation would do this; the loop must switch back
            return step == 7

    plain = lambda logits, targets: nn.functional.cross_entropy(logits.reshape(-1, 5), targets.reshape(-1))
    history = train(model, lambda step: (x, x), TrainConfig(steps=20, warmup=0), loss_fn=plain,
                    progress=False, callbacks=[Stop()])
    assert seen == [(s, s) for s in range(1, 8)]  # called after each step, with that step's loss recorded
    assert all(modes)  # training mode restored before every step
    assert len(history.losses) == 7 and history.callback_seconds >= 0
    with pytest.raises(TypeError, match="callbacks must be a list of course_utils.training.Callback"):
        train(model, lambda step: (x, x), TrainConfig(steps=2, warmup=0), progress=False, callbacks=[3])
    with pytest.raises(TypeError, match="callbacks must be a list"):
        train(model, lambda step: (x, x), TrainConfig(steps=2, warmup=0), progress=False, callbacks=Stop())


def test_callback_after_backward_sees_raw_gradients_before_clipping():
    torch.manual_seed(0)
    model = nn.Linear(3, 4)
    x, y = torch.randn(2, 1, 3) * 100, torch.tensor([[1], [2]])  # large inputs: gradients far above the clip
    seen = []

    class Record(Callback):
        def after_backward(self, step, logits, batch):
            assert logits.shape == (2, 1, 4) and not logits.requires_grad and batch[-1] is y
            seen.append((step, float(torch.linalg.vector_norm(model.weight.grad))))

    train(model, lambda s: (x, y), TrainConfig(steps=3, warmup=0, clip=1e-3), progress=False, callbacks=[Record()])
    assert [s for s, _ in seen] == [1, 2, 3]
    assert seen[0][1] > 1.0  # unclipped: clipping happens after the callback


def test_callback_time_is_never_training_time():
    model = nn.Linear(3, 4)
    x, y = torch.randn(2, 1, 3), torch.tensor([[1], [2]])

    class Slow(Callback):
        def after_backward(self, step, logits, batch):
            time.sleep(0.05)

        def after_step(self, step, model, history):
            time.sleep(0.05)
            sum(i * i for i in range(20000))  # some CPU time too

    history = train(model, lambda s: (x, y), TrainConfig(steps=4, warmup=0), progress=False, callbacks=[Slow()])
    assert history.callback_seconds >= 0.4  # 4 steps x 2 callbacks x 50 ms
    assert history.seconds < history.callback_seconds  # the sleeps are not in the training time
    assert history.cpu_seconds >= 0


def test_steps_to_records_the_first_checked_step_reaching_the_target():
    class Scripted(StepsTo):
        def score(self, step, model):
            return {2: 0.5, 4: 0.995, 6: 0.9, 8: 1.0}.get(step)

    model = nn.Linear(3, 4)
    x, y = torch.randn(2, 1, 3), torch.tensor([[1], [2]])
    tracker = Scripted(0.99, every=2)
    train(model, lambda s: (x, y), TrainConfig(steps=8, warmup=0), progress=False, callbacks=[tracker])
    assert tracker.reached == 4  # the first checked step at or above the target; later dips do not undo it
    with pytest.raises(ValueError, match="target"):
        Scripted(1.5)



def test_warmup_cosine_scheduler_follows_the_schedule():
    from course_utils.schedules import warmup_cosine_lr
    from course_utils.training import warmup_cosine_scheduler

    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=0.5)
    sched = warmup_cosine_scheduler(opt, warmup=3, total=10)
    got = []
    for _ in range(10):
        got.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert got == pytest.approx([warmup_cosine_lr(s, 0.5, 3, 10) for s in range(1, 11)])
    with pytest.raises(ValueError, match="warmup must be an int in"):
        warmup_cosine_scheduler(opt, warmup=10, total=10)
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer"):
        warmup_cosine_scheduler("adam", warmup=1, total=10)


@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_optimizer_takes_the_same_steps_as_the_one_parameter_at_a_time_loop(optimizer: str) -> None:
    """make_optimizer's foreach update gives, bit for bit, the weights of PyTorch's per-parameter loop."""
    from course_utils.training import make_optimizer

    config = TrainConfig(steps=5, lr=1e-2, warmup=0, optimizer=optimizer, weight_decay=0.1)
    weights = []
    for ours in (True, False):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
        kind = torch.optim.Adam if optimizer == "adam" else torch.optim.AdamW
        extra = {} if optimizer == "adam" else {"weight_decay": 0.1}
        opt = make_optimizer(model, config) if ours else kind(model.parameters(), lr=1e-2, betas=config.betas,
                                                               foreach=False, **extra)
        x = torch.randn(16, 6, generator=torch.Generator().manual_seed(1))
        for _ in range(5):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        weights.append([p.detach().clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*weights, strict=True))
