"""The freshness check: every shipped result, and the function that gives the code's recipe for it.

``REGISTRY`` maps an asset file name (in ``course_utils/assets/``) to a function returning the
recipe the code would use today (a JSON-able dict). Each shipped file stores the recipe that made
it under the key ``recipe``; :func:`check` compares the two. ``MADE_BY`` says what each file is
and the command that makes it; ``course_utils/assets/README.md`` is generated from it
(``python -m course_utils.runs readme``; a unit test checks it is up to date). To register a new
result, add one line to each: ``"my_result.json": lambda: MY_RECIPE,`` and
``"my_result.json": ("what it holds", "python benchmarks/my_result.py --write"),``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..validate import check_callable
from .ablations import ABLATIONS_FILE, ablations_recipe
from .charlm import CHARLM_CHECKPOINT, CHARLM_RECIPE
from .core import ASSETS, stored_recipe
from .ffn import FFN_ACTIVATIONS_FILE, FFN_ACTIVATIONS_RECIPE
from .length import (
    EXTRA_ROWS_FILE,
    LOSER,
    RESULTS_FILE,
    WINNER,
    checkpoint_file,
    extra_rows_recipe,
    results_recipe,
    shipped_recipe,
)
from .mlm import MLM_FILE, MLM_RECIPE
from .modern import (
    ATTENTION_AT_SCALE_FILE,
    ATTENTION_AT_SCALE_RECIPE,
    GQA_UPTRAINING_FILE,
    GQA_UPTRAINING_RECIPE,
    MODERN_BLOCK_FILE,
    MODERN_BLOCK_RECIPE,
)
from .reversal import DECODER_ONLY_CHECKPOINT, DECODER_ONLY_RECIPE, FAST_RECIPE, REVERSAL_CHECKPOINT
from .rope_stretch import ROPE_STRETCH_FILE, rope_stretch_recipe
from .scaling import SCALING_FILE, SCALING_RECIPE
from .translation import TRANSLATION_CHECKPOINT, TRANSLATION_RECIPE, TRANSLATION_RESULTS
from .translation import benchmark_recipe as translation_benchmark_recipe
from .vit import VIT_FILE, VIT_RECIPE

BENCHMARK_FILE = "ch08_reversal_benchmark.json"


def ch08_benchmark_recipe() -> dict[str, Any]:
    """The recipe of Chapter 8's side-by-side benchmark (``benchmarks/reversal.py --arch both``)."""
    return {"encoder-decoder": FAST_RECIPE, "decoder-only": DECODER_ONLY_RECIPE,
            "benchmark": {"n_per_length": 200, "eval_every": 25, "lengths": [3, 15], "torch_threads": 1}}


GRID_FILE = "ch08_reversal_grid.json"


def ch08_grid_recipe() -> dict[str, Any]:
    """The recipe of Chapter 8's robustness grid (``benchmarks/reversal_grid.py``): the decoder-only recipe,
    trained for each seed in each numerics setting, greedy exact match on 200 strings per length."""
    return {"decoder-only": DECODER_ONLY_RECIPE,
            "grid": {"seeds": [0, 1, 2], "settings": ["1 thread", "2 threads", "portable kernels"],
                     "n_per_length": 200, "lengths": [3, 10]}}


REGISTRY: dict[str, Callable[[], Any]] = {
    REVERSAL_CHECKPOINT: lambda: FAST_RECIPE,
    DECODER_ONLY_CHECKPOINT: lambda: DECODER_ONLY_RECIPE,
    CHARLM_CHECKPOINT: lambda: CHARLM_RECIPE,
    checkpoint_file(WINNER): lambda: shipped_recipe(WINNER),
    checkpoint_file(LOSER): lambda: shipped_recipe(LOSER),
    RESULTS_FILE: results_recipe,
    ABLATIONS_FILE: ablations_recipe,
    BENCHMARK_FILE: ch08_benchmark_recipe,
    GRID_FILE: ch08_grid_recipe,
    EXTRA_ROWS_FILE: extra_rows_recipe,
    MODERN_BLOCK_FILE: lambda: MODERN_BLOCK_RECIPE,
    ATTENTION_AT_SCALE_FILE: lambda: ATTENTION_AT_SCALE_RECIPE,
    GQA_UPTRAINING_FILE: lambda: GQA_UPTRAINING_RECIPE,
    SCALING_FILE: lambda: SCALING_RECIPE,
    VIT_FILE: lambda: VIT_RECIPE,
    MLM_FILE: lambda: MLM_RECIPE,
    TRANSLATION_CHECKPOINT: lambda: TRANSLATION_RECIPE,
    TRANSLATION_RESULTS: translation_benchmark_recipe,
    FFN_ACTIVATIONS_FILE: lambda: FFN_ACTIVATIONS_RECIPE,
    ROPE_STRETCH_FILE: rope_stretch_recipe,
}


# file -> (what it holds, the command that makes it); the README's table, in this order
MADE_BY: dict[str, tuple[str, str]] = {
    REVERSAL_CHECKPOINT: ("Chapter 6's encoder-decoder reversal model (fast recipe)",
                          "python scripts/train_checkpoint.py --run reversal"),
    DECODER_ONLY_CHECKPOINT: ("Chapter 8's decoder-only reversal model, with its training loss per step",
                              "python scripts/train_checkpoint.py --run decoder-only"),
    CHARLM_CHECKPOINT: ("Chapter 8's character language model, with its training log (loss per step, validation "
                        "bits/char)", "python scripts/train_checkpoint.py --run charlm"),
    BENCHMARK_FILE: ("Chapter 8's side-by-side table: both architectures trained in one run",
                     "python benchmarks/reversal.py --arch both --eval-every 25 --threads 1 --write"),
    GRID_FILE: ("Chapter 8's robustness grid: the decoder-only reversal recipe for seeds 0-2 with one thread, two "
                "threads and the portable kernels (`ATEN_CPU_CAPABILITY=default`), exact match at lengths 3-10",
                "python benchmarks/reversal_grid.py --write"),
    checkpoint_file(WINNER): ("Chapter 9's winning recipe, trained on lengths 3-10, with its exact match and token "
                              "accuracy at lengths 3-40", "python scripts/train_checkpoint.py --run length"),
    checkpoint_file(LOSER): ("Chapter 9's paper's sinusoidal model (the experiment's steps), trained on lengths "
                             "3-10, with its exact match and token accuracy at lengths 3-40",
                             "python scripts/train_checkpoint.py --run length"),
    RESULTS_FILE: ("Chapter 9's experiment: every positional scheme, exact match and token accuracy at lengths 3-40",
                   "python benchmarks/length_generalisation.py --write"),
    EXTRA_ROWS_FILE: ("Chapter 9's two extra rows: the randomized recipe scored with plain and with random "
                      "positions at test time, and sinusoidal positions counted from the end (lengths 3-40)",
                      "python benchmarks/length_extra_rows.py --write"),
    ABLATIONS_FILE: ("Chapter 10's measurements: the GRU baselines and the Transformer with Chapter 6's fast "
                     "recipe, time per training step with one thread and with one per core, and Table 3 in "
                     "miniature (its `no_ffn` row was added by `python benchmarks/ablations.py --parts table3 "
                     "--rows base,no_ffn --write`, whose base row reproduced the shipped one)",
                     "python benchmarks/ablations.py --write"),
    FFN_ACTIVATIONS_FILE: ("Chapter 5's FFN activations on the character LM: ReLU, GELU, SwiGLU and GeGLU at equal "
                           "parameters, seeds 0-2, bits/char and CPU ms per step (`FFN_ACTIVATIONS_RECIPE`)",
                           "python benchmarks/ffn_activations.py --write"),
    ROPE_STRETCH_FILE: ("Chapter 9's RoPE stretching: the plain RoPE scheme with position interpolation and NTK-aware "
                        "scaling (factor 4), with no retraining and after a 100-step fine-tune, and the shipped "
                        "winner, "
                        "exact-match counts at lengths 10, 20, 40 (`rope_stretch_recipe()`)",
                        "python benchmarks/rope_stretch.py --write"),
    ATTENTION_AT_SCALE_FILE: ("Chapter 11's attention at scale: plain, tiled, SDPA and linear attention timed outside "
                              "any profiler (CPU seconds, one thread, interleaved rounds) and their peak memory as T "
                              "grows, causal and not, with the tiles computed; the gradient-checkpointing step",
                              "python benchmarks/attention_at_scale.py --only flash --write"),
    GQA_UPTRAINING_FILE: ("Chapter 11's uptraining of Chapter 8's character LM mean-pooled to GQA and MQA, against "
                          "the unchanged control, six seeds, validation bits/char; MQA's and the control's curves "
                          "over uptraining lengths (Exercise 11.4's reference)",
                          "python benchmarks/attention_at_scale.py --only gqa --write"),
    MODERN_BLOCK_FILE: ("Chapter 11's modern-block table: the 2017 block, each modern change alone and all "
                        "together on the character LM, validation bits/char and CPU ms per step",
                        "python benchmarks/modern_block.py --write"),
    SCALING_FILE: ("Chapter 12's scaling laws in miniature: the character LM at six sizes and five training "
                   "lengths, validation bits/char, the power-law fits and the recipe",
                   "python benchmarks/scaling.py --threads 1 --write"),
    VIT_FILE: ("Chapter 12's Vision Transformer on scikit-learn's 8x8 digits, with its scores and those of the "
               "MLP of the same size trained with the same recipe (`results[\"baseline\"]`)",
               "python benchmarks/vit_digits.py --threads 1 --write"),
    MLM_FILE: ("Chapter 12's masked-language model, with its loss per step and its CPU seconds",
               "python scripts/train_checkpoint.py --run mlm --threads 1"),
    TRANSLATION_CHECKPOINT: ("Chapter 13's English-to-German model (recipe `TRANSLATION_RECIPE`: shared BPE "
                             "vocabulary, tied embeddings, label smoothing 0.1, warm-up schedule, the average of the "
                             "last 5 checkpoints), with its BPE merges, training curve, CPU seconds and scores",
                             "python benchmarks/translation.py --jobs 8 --write"),
    TRANSLATION_RESULTS: ("Chapter 13's Tables 2 and 3 in miniature: every variant's scores (BLEU, chrF with "
                          "paired-bootstrap intervals, exact match with Wilson intervals) in and beyond the training "
                          "range, perplexities, failures, and the recipe (`benchmark_recipe()`)",
                          "python benchmarks/translation.py --jobs 8 --write"),
}

README_HEAD = """# Assets shipped with course_utils

<!-- Generated from course_utils/runs/registry.py by `python -m course_utils.runs readme`; do not edit. -->

Every `.pt` and `.json` here stores the full recipe that made it under the key `recipe`;
`python -m course_utils.runs check` compares it with the code (`course_utils/runs/registry.py`).
Checkpoints have one format: `{"kind", "config", "recipe", "results", "state_dict"}`.
Benchmarks print their results and write a shipped file only with `--write`.

| file | what | made by |
|---|---|---|
"""

README_CORPUS = """| `tinyshakespeare.txt.gz` | the tiny Shakespeare corpus, gzip-compressed | see below |

## tinyshakespeare.txt.gz

The "tiny Shakespeare" character-level corpus: 1,115,394 bytes (65 distinct characters) of
dialogue from Shakespeare's plays, which are in the public domain. Taken from Andrej
Karpathy's char-rnn repository, file `data/tinyshakespeare/input.txt`, the text that char-rnn
and nanoGPT use for character language models. Compressed here with `gzip -9 -n`; the
*uncompressed* text has SHA-256
`86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed`, which
`course_utils.charlm.load_corpus()` checks on every load. Nothing is downloaded at run time.
"""


def assets_readme() -> str:
    """The text of ``course_utils/assets/README.md``: one table row per registered file, from :data:`MADE_BY`."""
    missing = sorted(set(REGISTRY) ^ set(MADE_BY))
    if missing:
        raise ValueError(f"REGISTRY and MADE_BY must list the same files, got {missing} in only one of them")
    rows = [f"| `{name}` | {what} | `{command}` |" for name, (what, command) in MADE_BY.items()]
    return README_HEAD + "\n".join(rows) + "\n" + README_CORPUS


def _plain(value: Any) -> Any:
    """JSON round trip: tuples become lists, so stored and code recipes compare as data."""
    return json.loads(json.dumps(value))


def differences(stored: Any, code: Any, where: str = "recipe") -> list[str]:
    """Human-readable differences between a stored recipe and the code's, one per leaf."""
    if isinstance(stored, dict) and isinstance(code, dict):
        out = []
        for key in sorted(set(stored) | set(code), key=str):
            path = f"{where}.{key}"
            if key not in code:
                out.append(f"{path} is stored ({stored[key]!r}) but not in the code")
            elif key not in stored:
                out.append(f"{path} is in the code ({code[key]!r}) but not stored")
            else:
                out.extend(differences(stored[key], code[key], path))
        return out
    return [] if stored == code else [f"{where} stored {stored!r}, code {code!r}"]


def check_one(name: str, code_recipe: Callable[[], Any], assets: Path = ASSETS) -> str:
    """``"fresh"`` or ``"stale: <what differs>"`` for the shipped file ``name``."""
    check_callable("code_recipe", code_recipe, "a function that returns the code's recipe")
    path = Path(assets) / name
    if not path.exists():
        return "stale: the file is missing"
    stored = stored_recipe(path)
    if stored is None:
        return "stale: the file stores no recipe"
    diffs = differences(_plain(stored), _plain(code_recipe()))
    if not diffs:
        return "fresh"
    more = f" (and {len(diffs) - 3} more)" if len(diffs) > 3 else ""
    return "stale: " + "; ".join(diffs[:3]) + more


def check(registry: Mapping[str, Callable[[], Any]] | None = None, assets: Path = ASSETS) -> dict[str, str]:
    """{file name: "fresh" or "stale: ..."} for every registered shipped result."""
    registry = REGISTRY if registry is None else registry
    if not isinstance(registry, Mapping):
        raise TypeError(f"registry must be a dict of file name -> recipe function, got {type(registry).__name__}")
    for name, fn in registry.items():
        check_callable(f"registry[{name!r}]", fn, "a function that returns the code's recipe")
    return {name: check_one(name, fn, assets) for name, fn in registry.items()}
