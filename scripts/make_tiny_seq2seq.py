#!/usr/bin/env python3
"""Generate tiny, randomly initialised encoder-decoder MT models plus tokenizers for tests.

Usage::

    python scripts/make_tiny_seq2seq.py marian OUT_DIR   # an OPUS-MT-style en->es MarianMTModel
    python scripts/make_tiny_seq2seq.py nllb OUT_DIR     # an NLLB-200-style M2M100 model
    python scripts/make_tiny_seq2seq.py metricx OUT_DIR  # a MetricX-24-style QE regressor (mT5)

Both are regular Hugging Face model directories that ``transformers`` loads with
``AutoModelForSeq2SeqLM`` / ``AutoTokenizer``, built the way the real ones are:

* **marian**: a SentencePiece unigram model trained (``sentencepiece``'s trainer) on the
  English/Spanish sentences of ``make_tiny_model.py``, saved as ``source.spm`` and
  ``target.spm`` with a ``vocab.json`` (``</s>`` 0, ``<unk>`` 1, ``<pad>`` last, as OPUS-MT
  has them) and ``source_lang``/``target_lang`` in ``tokenizer_config.json`` (en, es: the pair
  the engine serves).
* **nllb**: a byte-pair vocabulary trained with ``tokenizers`` on the same sentences, given to
  ``NllbTokenizer`` (transformers 5 builds it from a vocabulary and merges), which adds the 202
  FLORES-200 language codes (``eng_Latn``, ``spa_Latn``...) as special tokens; the model is an
  ``M2M100ForConditionalGeneration`` (what NLLB-200 is).
* **metricx**: a quality-estimation model as MetricX-24 is one (google/metricx-24-hybrid-*,
  read by :mod:`mtfleet.workers.quality`): an ``MT5ForConditionalGeneration`` whose score is
  the logit of vocabulary id 250089 at the first decoder step, with a ``T5Tokenizer`` (a
  unigram vocabulary trained with ``tokenizers`` on the same sentences; ``<pad>`` 0, ``</s>``
  1, ``<unk>`` 2, as mT5's). The vocabulary of the *model* is mT5's size (250,112 rows, the
  score id among them: the real id, not a test's), in 16 dimensions. The score row is fitted
  to the final hidden states of a few corpus sentences (:func:`metricx_calibration`): with
  their own translations they score low, with others' high, spread over MetricX's 0-25 and
  past it (scores are clipped): a direction and a scale a test can check, and no more than
  that (other inputs score at random).

The weights are random (seeded): the models translate nothing. They exercise the plumbing:
loading, language codes, padding, length-sorted batches, beams, the forced target-language
token. Their generation configs suppress the special tokens (``suppress_tokens``), so
decoding never ends early and never produces an empty text: outputs always run to
``max_new_tokens`` (the engine reports them truncated), like the tiny causal model's.

Idempotent like ``make_tiny_model.py``: a marker file holds the recipe's fingerprint, and an
up-to-date directory is left alone (``exists``, without importing torch).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

RECIPE_VERSION = "2"
MARKER = ".mtfleet_tiny_seq2seq"
SEED = 0
SCALE = 0.2  # weight std: large enough that different inputs give different outputs
VOCAB_SIZE = 600
MODEL = {
    "d_model": 64,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "max_position_embeddings": 256,
}
FAMILIES = ("marian", "nllb", "metricx")
#: MetricX-24 (mtfleet.workers.quality.SCORE_TOKEN_ID): the id whose logit is the score.
METRICX_SCORE_ID = 250089
METRICX_VOCAB = 250112  # mT5's
METRICX_MODEL = {
    "d_model": 16,
    "d_kv": 8,
    "d_ff": 32,
    "num_layers": 1,
    "num_decoder_layers": 1,
    "num_heads": 2,
    "relative_attention_num_buckets": 8,
}


def _sentences() -> list[tuple[str, str, str]]:
    """The parallel sentences of make_tiny_model.py (one corpus for every tiny model)."""
    path = Path(__file__).with_name("make_tiny_model.py")
    spec = importlib.util.spec_from_file_location("make_tiny_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.SENTENCES)


def _corpus() -> list[str]:
    lines = []
    for en, es, _zh in _sentences():
        lines += [en, es]
    return lines


def fingerprint(family: str) -> str:
    blob = json.dumps(
        {"recipe": RECIPE_VERSION, "family": family, "seed": SEED, "scale": SCALE}
        | {"vocab": VOCAB_SIZE, "model": MODEL, "corpus": _corpus()}
        | (
            {"metricx": METRICX_MODEL, "id": METRICX_SCORE_ID, "v": 3}
            if family == "metricx"
            else {}
        ),
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def already_built(out_dir: Path, family: str) -> bool:
    try:
        return (out_dir / MARKER).read_text().strip() == fingerprint(family) and (
            out_dir / "config.json"
        ).is_file()
    except OSError:
        return False


def build_marian(work: Path) -> int:
    import sentencepiece as spm
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    prefix = work / "spm"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_corpus()),
        model_prefix=str(prefix),
        vocab_size=VOCAB_SIZE,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    processor = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    vocab = {"</s>": 0, "<unk>": 1}
    for piece in pieces:
        if piece not in ("<unk>", "<s>", "</s>"):
            vocab.setdefault(piece, len(vocab))
    vocab["<pad>"] = len(vocab)  # OPUS-MT: the last id, also the decoder's start token
    for name in ("source.spm", "target.spm"):
        shutil.copy(f"{prefix}.model", work / name)
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=1))
    for suffix in (".model", ".vocab"):
        Path(f"{prefix}{suffix}").unlink()
    tokenizer = MarianTokenizer(
        str(work / "source.spm"),
        str(work / "target.spm"),
        str(work / "vocab.json"),
        source_lang="en",
        target_lang="es",
        model_max_length=MODEL["max_position_embeddings"],
    )
    tokenizer.save_pretrained(str(work))
    pad = vocab["<pad>"]
    config = MarianConfig(
        vocab_size=len(vocab),
        decoder_vocab_size=len(vocab),
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        **MODEL,
    )
    model = MarianMTModel(config)
    _randomise(model)
    _save(model, work, pad=pad, eos=0, start=pad, suppress=[0, 1, pad])
    return len(vocab)


def build_nllb(work: Path) -> int:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer

    specials = ["<s>", "<pad>", "</s>", "<unk>"]  # NLLB's ids 0..3
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    bpe.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=specials, min_frequency=1, show_progress=False
    )
    bpe.train_from_iterator(_corpus(), trainer=trainer)
    state = json.loads(bpe.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in state["merges"]]
    tokenizer = NllbTokenizer(vocab=state["vocab"], merges=merges, src_lang="eng_Latn")
    tokenizer.model_max_length = MODEL["max_position_embeddings"]
    tokenizer.save_pretrained(str(work))
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in specials}
    config = M2M100Config(
        vocab_size=len(tokenizer),
        pad_token_id=ids["<pad>"],
        bos_token_id=ids["<s>"],
        eos_token_id=ids["</s>"],
        decoder_start_token_id=ids["</s>"],  # NLLB: </s> starts, the target code follows
        scale_embedding=True,
        **MODEL,
    )
    model = M2M100ForConditionalGeneration(config)
    _randomise(model)
    # The 202 language codes (and <mask>) are a quarter of this tiny vocabulary: with their
    # (tied) embedding rows near zero their logits sit near 0, below the best random ones, so
    # they are never generated except where the target's code is forced.
    codes = [i for i in tokenizer.all_special_ids if i not in ids.values()]
    with torch.no_grad():
        model.get_input_embeddings().weight[codes] *= 0.01
    eos = ids["</s>"]
    _save(model, work, pad=ids["<pad>"], eos=eos, start=eos, suppress=list(ids.values()))
    return len(tokenizer)


def metricx_calibration() -> tuple[list[tuple[str, str]], list[float]]:
    """The (source, translation) pairs the tiny MetricX model's score row is fitted to (half
    as many as the model has dimensions: the fit is exact, and the least-norm row keeps it
    well conditioned, so batching and padding move a score by far less than 0.01, whatever
    vocabulary the tokenizer's training gave), with their raw scores: the first half, sentences with
    their own translations, from -2 to 6 (good; the first clipped to 0); the second half, the
    same sentences with others' translations, from 18 to 30 (bad; the last clipped to 25)."""
    half = METRICX_MODEL["d_model"] // 4
    corpus = _sentences()
    good = [(en, es) for en, es, _zh in corpus[:half]]
    bad = [(en, corpus[(n + 7) % len(corpus)][1]) for n, (en, _es, _zh) in enumerate(corpus[:half])]
    step_good, step_bad = 8 / (half - 1), 12 / (half - 1)
    scores = [-2 + n * step_good for n in range(half)] + [18 + n * step_bad for n in range(half)]
    return good + bad, scores


def _canonical_unigram(pieces: list[str], specials: list[str]) -> list[tuple[str, float]]:
    """The trained pieces as a vocabulary that is the same on every build: ``tokenizers``'
    unigram trainer picks the same pieces each time but orders them and sets their scores
    (to the last few thousandths) differently from one run to the next (its hash maps and
    parallel sums), and a piece's id is its row in the model. So each piece is scored by how
    often it occurs in the corpus's words (the log of its share, as a unigram model's scores
    are) and ordered by that score, then by the piece: the specials first, at their ids."""
    words = [f"▁{w}" for text in _corpus() for w in text.split()]
    rest = sorted(set(pieces) - set(specials))
    counts = {p: sum(w.count(p) for w in words) + 1 for p in rest}
    total = sum(counts.values())
    scored = sorted(((p, math.log(counts[p] / total)) for p in rest), key=lambda x: (-x[1], x[0]))
    return [(p, 0.0) for p in specials] + scored


def build_metricx(work: Path) -> int:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import MT5Config, MT5ForConditionalGeneration, T5Tokenizer

    specials = ["<pad>", "</s>", "<unk>"]  # mT5's ids 0..2
    unigram = Tokenizer(models.Unigram())
    unigram.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=specials, unk_token="<unk>", show_progress=False
    )
    unigram.train_from_iterator(_corpus(), trainer=trainer)
    trained = [piece for piece, _ in json.loads(unigram.to_str())["model"]["vocab"]]
    tokenizer = T5Tokenizer(vocab=_canonical_unigram(trained, specials), extra_ids=0)
    tokenizer.model_max_length = 1536  # MetricX-24's input length
    tokenizer.save_pretrained(str(work))
    config = MT5Config(
        vocab_size=METRICX_VOCAB,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        tie_word_embeddings=False,
        **METRICX_MODEL,
    )
    model = MT5ForConditionalGeneration(config).eval()
    # mT5 v1.1 (so MetricX) has a head of its own, not the input embeddings: transformers 5
    # ties them in the config whatever it is given, and unties a checkpoint holding both
    model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
    model.config.tie_word_embeddings = False
    _randomise(model)
    pairs, wanted = metricx_calibration()
    batch = tokenizer(
        [f"source: {src} candidate: {hyp}" for src, hyp in pairs],
        add_special_tokens=False,
        padding=True,
        return_tensors="pt",
    )
    start = torch.zeros((len(pairs), 1), dtype=torch.long)
    with torch.no_grad():
        out = model(**batch, decoder_input_ids=start, output_hidden_states=True)
        hidden = out.decoder_hidden_states[-1][:, 0, :]  # what the head reads
        target = torch.tensor(wanted).unsqueeze(1)
        row = torch.linalg.lstsq(hidden, target).solution.squeeze(1)
        model.lm_head.weight[METRICX_SCORE_ID] = row
        got = model(**batch, decoder_input_ids=start).logits[:, 0, METRICX_SCORE_ID]
        assert torch.allclose(got, target.squeeze(1), atol=1e-3), (
            "the head does not give the fitted scores"
        )
    model.save_pretrained(str(work), safe_serialization=True)
    return len(tokenizer)


def _randomise(model: Any) -> None:
    """Seeded N(0, SCALE) weights, norms at 1 (independent of transformers' own init)."""
    import torch

    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                param.fill_(1.0)
            elif "norm" in name and name.endswith("bias"):
                param.zero_()
            else:
                param.copy_(torch.randn(param.shape, generator=gen) * SCALE)


def _save(model: Any, work: Path, *, pad: int, eos: int, start: int, suppress: list[int]) -> None:
    """The weights and a generation config: two beams, and ``suppress`` (the special tokens)
    never generated, so decoding never ends early and never yields an empty text."""
    from transformers import GenerationConfig

    model.save_pretrained(str(work), safe_serialization=True)
    GenerationConfig(
        pad_token_id=pad,
        eos_token_id=eos,
        decoder_start_token_id=start,
        num_beams=2,
        suppress_tokens=sorted(set(suppress)),
    ).save_pretrained(str(work))


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in FAMILIES:
        print(f"usage: {argv[0]} {{{'|'.join(FAMILIES)}}} OUT_DIR", file=sys.stderr)
        return 2
    family, out_dir = argv[1], Path(argv[2]).resolve()
    if already_built(out_dir, family):
        print("exists")
        return 0
    import torch

    torch.manual_seed(SEED)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        build = {"marian": build_marian, "nllb": build_nllb, "metricx": build_metricx}[family]
        vocab = build(work)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(work, out_dir)
        for item in out_dir.iterdir():
            item.chmod(0o644)
        out_dir.chmod(0o755)
        (out_dir / MARKER).write_text(fingerprint(family) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {out_dir} ({family}, vocab {vocab})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
