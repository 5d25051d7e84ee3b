"""Translating English number names into German (or French): data, batches, decoding, BLEU, chrF,
exact match, perplexity, checkpoint averaging and cross-attention alignment. Chapter 13.

The data comes from ``num2words`` (no download): ``number_name(1234, "de")`` is
``"eintausendzweihundertvierunddreißig"``. Source and target share one BPE vocabulary
(:mod:`course_utils.bpe`) and, with ``tie_embeddings=True``, one embedding matrix (section 3.4
of the paper). Decoding uses Chapter 6's greedy decoder and beam search; scores use ``sacrebleu``.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Sequence
from typing import Any, cast

import torch
from num2words import num2words
from torch import Tensor, nn

from .bpe import EOS_ID, PAD_ID, SOS_ID, BPETokenizer
from .decoding import beam_search, greedy_decode
from .stats import binomial_interval
from .training import Callback, TrainHistory
from .validate import (
    check_choice,
    check_int,
    check_module,
    check_number,
    check_positive_int,
    check_str_list,
)

Pair = tuple[str, str]


# ---------------------------------------------------------------- data
def number_name(n: int, lang: str = "de") -> str:
    """The name of the integer ``n`` in language ``lang`` ("en", "de", "fr", "nl", ...), from num2words. Chapter 13."""
    n = check_int("n", n, low=0)
    if not isinstance(lang, str):
        raise TypeError(f"lang must be a num2words language code such as 'de', got {type(lang).__name__}")
    try:
        return num2words(n, lang=lang)
    except NotImplementedError:
        raise ValueError(f"lang must be a language num2words knows (such as 'en', 'de', 'fr'), got {lang!r}") from None


def make_pairs(numbers: Sequence[int], target: str = "de", source: str = "en") -> list[Pair]:
    """(source name, target name) of every number in ``numbers``. Chapter 13."""
    if isinstance(numbers, (str, bytes)) or not isinstance(numbers, Sequence):
        raise TypeError(f"numbers must be a sequence of ints, got {type(numbers).__name__}")
    return [(number_name(n, source), number_name(n, target)) for n in numbers]


def split_numbers(limit: int, n_test: int, seed: int = 0) -> tuple[list[int], list[int]]:
    """(train, test): the numbers 0..limit-1 shuffled with ``seed``; ``n_test`` of them are for testing. Chapter 13."""
    limit = check_positive_int("limit", limit)
    n_test = check_int("n_test", n_test, low=1, high=limit - 1)
    seed = check_int("seed", seed)
    numbers = list(range(limit))
    random.Random(seed).shuffle(numbers)
    return sorted(numbers[n_test:]), sorted(numbers[:n_test])


def beyond_numbers(low: int, high: int, n: int, seed: int = 0) -> list[int]:
    """``n`` distinct numbers drawn with ``seed`` from low..high-1 (beyond the training range). Chapter 13."""
    low = check_int("low", low, low=0)
    high = check_int("high", high, low=low + 1)
    n = check_int("n", n, low=1, high=high - low)
    return sorted(random.Random(seed).sample(range(low, high), n))


def encode_pairs(tokenizer: BPETokenizer, pairs: Sequence[Pair]) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids of the sources and of the targets (no SOS/EOS yet). Chapter 13."""
    _check_tokenizer(tokenizer)
    return [tokenizer.encode(s) for s, _ in pairs], [tokenizer.encode(t) for _, t in pairs]


def pad(rows: Sequence[Sequence[int]]) -> Tensor:
    """A (B, T) long tensor of the rows, padded on the right with PAD. Chapter 13."""
    if isinstance(rows, (str, bytes, Tensor)) or not isinstance(rows, Sequence):
        raise TypeError(f"rows must be a list of token-id lists, got {type(rows).__name__}")
    if not rows:
        raise ValueError("rows must hold at least one sequence, got none")
    T = max(len(r) for r in rows)
    out = torch.full((len(rows), T), PAD_ID, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(list(r), dtype=torch.long)
    return out


def teacher_forcing(src_rows: Sequence[Sequence[int]],
                    tgt_rows: Sequence[Sequence[int]]) -> tuple[Tensor, Tensor, Tensor]:
    """(src, tgt_in = SOS + target, tgt_out = target + EOS), each (B, T) padded with PAD. Chapter 13."""
    if len(src_rows) != len(tgt_rows):
        raise ValueError(f"src_rows and tgt_rows must have the same length, got {len(src_rows)} and {len(tgt_rows)}")
    return pad(src_rows), pad([[SOS_ID, *t] for t in tgt_rows]), pad([[*t, EOS_ID] for t in tgt_rows])


def batch_sampler(src_rows: Sequence[Sequence[int]], tgt_rows: Sequence[Sequence[int]], batch_size: int,
                  generator: torch.Generator) -> Any:
    """``batch_fn(step)`` for :func:`course_utils.training.train`: random training pairs each step. Chapter 13."""
    check_positive_int("batch_size", batch_size)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    n = len(src_rows)
    if n == 0 or n != len(tgt_rows):
        raise ValueError(f"src_rows and tgt_rows must be non-empty and of equal length, got {n} and {len(tgt_rows)}")

    def batch_fn(step: int) -> tuple[Tensor, Tensor, Tensor]:
        idx = torch.randint(0, n, (batch_size,), generator=generator).tolist()
        return teacher_forcing([src_rows[i] for i in idx], [tgt_rows[i] for i in idx])

    return batch_fn


def _check_tokenizer(tokenizer: object) -> BPETokenizer:
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a course_utils.bpe.BPETokenizer, got {type(tokenizer).__name__}")
    return tokenizer


# ---------------------------------------------------------------- decoding
def translate(
    model: nn.Module,
    tokenizer: BPETokenizer,
    texts: Sequence[str],
    beam_size: int = 1,
    alpha: float = 0.0,
    extra: int = 50,
    batch_size: int = 250,
) -> list[str]:
    """The model's translation of each text: greedy (beam_size 1) or beam search. Chapter 13.

    Outputs are at most input length + ``extra`` tokens (the paper's limit: + 50).
    Beam search scores a finished hypothesis by its log-probability divided by the length
    penalty ``((5 + |Y|) / 6) ** alpha`` of Wu et al. (2016), the one the paper uses with alpha 0.6.
    """
    check_module("model", model)
    _check_tokenizer(tokenizer)
    texts = check_str_list("texts", texts, allow_empty=True)
    beam_size = check_positive_int("beam_size", beam_size)
    alpha = check_number("alpha", alpha, low=0.0)
    extra = check_positive_int("extra", extra)
    check_positive_int("batch_size", batch_size)
    model.eval()
    out: list[str] = []
    if beam_size == 1:
        for i in range(0, len(texts), batch_size):
            src = pad([tokenizer.encode(t) for t in texts[i : i + batch_size]])  # (B, T_src)
            ids = greedy_decode(model, src, max_len=src.shape[1] + extra)
            out.extend(tokenizer.decode(row.tolist()) for row in ids)
        return out
    for text in texts:
        src = pad([tokenizer.encode(text)])  # (1, T_src)
        best, _ = beam_search(model, src, max_len=src.shape[1] + extra, beam_size=beam_size,
                              length_penalty=alpha, penalty="gnmt")[0]
        out.append(tokenizer.decode(best))
    return out


# ---------------------------------------------------------------- scores
def exact_match_count(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[int, int]:
    """(number of hypotheses equal to their reference, number of pairs). Chapter 13."""
    hypotheses, references = _check_pairs(hypotheses, references)
    return sum(h == r for h, r in zip(hypotheses, references, strict=True)), len(references)


def _check_pairs(hypotheses: object, references: object) -> tuple[list[str], list[str]]:
    hyps = check_str_list("hypotheses", hypotheses)
    refs = check_str_list("references", references)
    if len(hyps) != len(refs):
        raise ValueError(f"hypotheses and references must have the same length, got {len(hyps)} and {len(refs)}")
    return hyps, refs


def bleu_metric() -> Any:
    """sacrebleu's BLEU on characters: German number names are one word, so word 4-grams do not exist. Chapter 13."""
    from sacrebleu.metrics import BLEU
    return BLEU(tokenize="char")


def chrf_metric() -> Any:
    """sacrebleu's chrF (character 6-grams, beta 2). Chapter 13."""
    from sacrebleu.metrics import CHRF
    return CHRF()


def scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """{"bleu", "chrf", "exact_match": {"k", "n", "rate", "low", "high"}} of one system. Chapter 13.

    BLEU and chrF are corpus scores from ``sacrebleu`` (0-100); exact match carries its Wilson interval.
    """
    hyps, refs = _check_pairs(hypotheses, references)
    k, n = exact_match_count(hyps, refs)
    low, high = binomial_interval(k, n)
    return {"bleu": bleu_metric().corpus_score(hyps, [refs]).score,
            "chrf": chrf_metric().corpus_score(hyps, [refs]).score,
            "exact_match": {"k": k, "n": n, "rate": k / n, "low": low, "high": high}}


def paired_bootstrap(systems: dict[str, Sequence[str]], references: Sequence[str], n_samples: int = 1000,
                     seed: int = 12345) -> dict[str, dict[str, dict[str, float | None]]]:
    """sacrebleu's paired bootstrap of BLEU and chrF: {system: {"bleu"|"chrf": {score, mean, ci, p}}}. Chapter 13.

    The first system is the baseline; ``p`` is the probability (from ``n_samples`` resamples of the
    test set) that another system's gain over it is chance; ``ci`` is the half-width of the 95 %
    interval of the resampled score. sacrebleu seeds its resampling with ``SACREBLEU_SEED`` (12345).
    """
    import os

    from sacrebleu.significance import PairedTest

    if not isinstance(systems, dict) or len(systems) < 2:
        raise ValueError(f"systems must be a dict of at least two named outputs, got {systems!r:.60}")
    refs = check_str_list("references", references)
    for hyps in systems.values():
        _check_pairs(hyps, refs)
    n_samples = check_positive_int("n_samples", n_samples)
    os.environ["SACREBLEU_SEED"] = str(check_int("seed", seed))
    test = PairedTest([(k, list(v)) for k, v in systems.items()], {"bleu": bleu_metric(), "chrf": chrf_metric()},
                      [refs], test_type="bs", n_samples=n_samples)
    _, results = test()
    out: dict[str, dict[str, dict[str, float | None]]] = {name: {} for name in systems}
    for metric, key in (("bleu", "BLEU"), ("chrf", "chrF2")):
        for name, r in zip(systems, results[key], strict=True):  # results list the systems in order
            r = cast(Any, r)  # sacrebleu's Result (its stubs also admit a str)
            out[name][metric] = {"score": float(r.score), "mean": float(r.mean), "ci": float(r.ci),
                                 "p": None if r.p_value is None else float(r.p_value)}
    return out


@torch.no_grad()
def perplexity(model: nn.Module, src_rows: Sequence[Sequence[int]], tgt_rows: Sequence[Sequence[int]],
               batch_size: int = 500) -> float:
    """exp(mean cross-entropy per target token, EOS included) with teacher forcing, no smoothing. Chapter 13."""
    check_module("model", model)
    check_positive_int("batch_size", batch_size)
    if len(src_rows) != len(tgt_rows):
        raise ValueError(f"src_rows and tgt_rows must have the same length, got {len(src_rows)} and {len(tgt_rows)}")
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(src_rows), batch_size):
        src, tgt_in, tgt_out = teacher_forcing(src_rows[i : i + batch_size], tgt_rows[i : i + batch_size])
        logits = model(src, tgt_in)  # (B, T, V)
        nll = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID,
                                                reduction="sum")
        total += float(nll)
        count += int((tgt_out != PAD_ID).sum())
    if count == 0:
        raise ValueError("src_rows and tgt_rows must hold at least one pair, got none")
    return math.exp(total / count)


# ---------------------------------------------------------------- checkpoint averaging
def average_state_dicts(states: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
    """The element-wise mean of several state dicts with the same keys and shapes. Chapter 13."""
    if isinstance(states, dict) or not isinstance(states, (list, tuple)) or not states:
        raise TypeError(f"states must be a non-empty list of state dicts, got {type(states).__name__}")
    keys = list(states[0])
    for i, s in enumerate(states):
        if not isinstance(s, dict) or list(s) != keys:
            raise ValueError(f"states[{i}] must be a state dict with the same keys as states[0], got other keys")
    out = {}
    for k in keys:
        stacked = torch.stack([s[k].detach().float() for s in states])
        out[k] = stacked.mean(0).to(states[0][k].dtype)
    return out


class KeepCheckpoints(Callback):
    """Keeps a copy of the weights every ``every`` steps, the last ``keep`` of them (section 6.1). Chapter 13."""

    def __init__(self, every: int, keep: int):
        self.every = check_positive_int("every", every)
        self.keep = check_positive_int("keep", keep)
        self.states: list[dict[str, Tensor]] = []
        self.steps: list[int] = []

    def after_step(self, step: int, model: nn.Module, history: TrainHistory) -> bool | None:
        if step % self.every == 0:
            self.states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
            self.steps.append(step)
            self.states, self.steps = self.states[-self.keep :], self.steps[-self.keep :]
        return None


def averaged_model(model: nn.Module, states: Sequence[dict[str, Tensor]]) -> nn.Module:
    """A copy of ``model`` holding the average of ``states`` (in eval mode). Chapter 13."""
    check_module("model", model)
    out = copy.deepcopy(model)
    out.load_state_dict(average_state_dicts(states))
    return out.eval()


# ---------------------------------------------------------------- reading the model
def token_spans(tokenizer: BPETokenizer, text: str) -> list[tuple[int, int]]:
    """Character span [start, end) in ``text`` of every token (a word-start marker stands for its space). Chapter 13."""
    _check_tokenizer(tokenizer)
    spans, pos = [], -1  # the marker in front of the first word stands before position 0
    for tok in tokenizer.tokens(text):
        spans.append((max(pos, 0), pos + len(tok)))
        pos += len(tok)
    return spans


@torch.no_grad()
def cross_attention(model: nn.Module, tokenizer: BPETokenizer, source: str, target: str) -> Tensor:
    """Cross-attention weights (layers, h, T_tgt + 1, T_src) of the model reading ``target`` for ``source``. Chapter 13.

    Row t is the decoder step that predicts target token t (the last row predicts EOS).
    """
    check_module("model", model)
    _check_tokenizer(tokenizer)
    src, tgt_in, _ = teacher_forcing([tokenizer.encode(source)], [tokenizer.encode(target)])
    model.eval()
    _, weights = model(src, tgt_in, return_attention=True)
    return torch.stack([w[0] for w in weights["cross"]])  # (layers, h, T_tgt + 1, T_src)


def units_tens_spans(n: int, target: str = "de") -> dict[str, tuple[int, int]] | None:
    """Where the units and the tens of ``n`` are written: {"src_units", "src_tens", "tgt_units"}, or None. Chapter 13.

    Only for numbers whose last two digits are 21-99 with a non-zero unit (``... thirty-four``),
    whose German name ends ``... vierunddreißig``: the unit comes first in German, last in English.
    """
    n = check_int("n", n, low=0)
    check_choice("target", target, ("de",))
    tens, units = (n % 100) // 10, n % 10
    if tens < 2 or units == 0:
        return None
    en, de = number_name(n, "en"), number_name(n, "de")
    en_units = number_name(units, "en")
    en_tens = number_name(10 * tens, "en")
    de_tail = number_name(n % 100, "de")
    de_units = de_tail[: de_tail.index("und")]
    if not (en.endswith(f"{en_tens}-{en_units}") and de.endswith(de_tail)):
        return None
    u0 = len(en) - len(en_units)
    t0 = u0 - 1 - len(en_tens)
    g0 = len(de) - len(de_tail)
    return {"src_units": (u0, len(en)), "src_tens": (t0, u0 - 1), "tgt_units": (g0, g0 + len(de_units))}


def _share(spans: Sequence[tuple[int, int]], span: tuple[int, int]) -> Tensor:
    """For each token span, the share of its characters that lie inside ``span`` (0 to 1)."""
    return torch.tensor([max(0, min(b, span[1]) - max(a, span[0])) / max(b - a, 1) for a, b in spans])


@torch.no_grad()
def units_alignment(model: nn.Module, tokenizer: BPETokenizer, numbers: Sequence[int]) -> dict[str, Any]:
    """How the German unit tokens attend to the English words: units vs tens, per decoder layer. Chapter 13.

    For every number ``...xy`` (tens 2-9, unit 1-9) the German name writes the unit first: the
    cross-attention mass (mean over heads and over the target tokens that start inside the German
    unit) on the English unit word and on the English tens word. A source token whose characters
    lie partly in both words (a BPE piece such as ``'▁forty-t'``) gives each word the share of the
    token's characters that lie in it, so no eligible number is left out. Returns {"n": numbers
    used, "eligible": numbers with tens 2-9 and a non-zero unit, "straddling": numbers with a
    source token in both words, "by_tens": {tens digit: numbers used}, "units_mass", "tens_mass",
    "units_wins": [per layer]}.
    """
    check_module("model", model)
    _check_tokenizer(tokenizer)
    if isinstance(numbers, (str, bytes)) or not isinstance(numbers, Sequence):
        raise TypeError(f"numbers must be a sequence of ints, got {type(numbers).__name__}")
    used = eligible = straddling = 0
    by_tens: dict[int, int] = {}
    sums = None
    for n in numbers:
        spans = units_tens_spans(int(n))
        if spans is None:
            continue
        eligible += 1
        en, de = number_name(int(n), "en"), number_name(int(n), "de")
        src_spans, tgt_spans = token_spans(tokenizer, en), token_spans(tokenizer, de)
        rows = [i for i, (a, _) in enumerate(tgt_spans) if spans["tgt_units"][0] <= max(a, 0) < spans["tgt_units"][1]]
        share_u, share_t = _share(src_spans, spans["src_units"]), _share(src_spans, spans["src_tens"])
        if not rows:
            continue
        straddling += int(bool(((share_u > 0) & (share_t > 0)).any()))
        w = cross_attention(model, tokenizer, en, de).mean(1)  # (layers, T_tgt + 1, T_src), mean over heads
        mass_u = (w[:, rows] * share_u).sum(-1).mean(-1)  # (layers,)
        mass_t = (w[:, rows] * share_t).sum(-1).mean(-1)
        if sums is None:
            sums = {k: torch.zeros(w.shape[0]) for k in ("units_mass", "tens_mass", "units_wins")}
        sums["units_mass"] += mass_u
        sums["tens_mass"] += mass_t
        sums["units_wins"] += (mass_u > mass_t).float()
        used += 1
        tens = (int(n) % 100) // 10
        by_tens[tens] = by_tens.get(tens, 0) + 1
    if used == 0 or sums is None:
        raise ValueError("numbers must include at least one number with tens 2-9 and a non-zero unit (like 34), "
                         "got none")
    return {"n": used, "eligible": eligible, "straddling": straddling, "by_tens": dict(sorted(by_tens.items())),
            **{k: (v / used).tolist() for k, v in sums.items()}}

