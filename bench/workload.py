"""Deterministic English segments for the benchmarks (en->es).

Every segment is built from a fixed vocabulary of ordinary catalogue words (so Apertium and
vLLM tokenizers see real words) with a seeded :class:`random.Random`, and carries its own
number, so no two segments are equal and the phrase cache never helps unless a scenario reuses
segments on purpose. ``tag`` keeps the segments of different phases apart.
"""

from __future__ import annotations

import random

SOURCE, TARGET = "en", "es"

_VOCABULARY = (
    "the a an this that our your their new old red blue green black white grey small large "
    "light heavy soft warm cold long short cotton wool leather steel wooden glass paper plastic "
    "shirt shirts dress shoes boots jacket coat hat bag table chair lamp window door house "
    "garden kitchen room book books watch phone cable charger bottle cup plate knife box "
    "is are was has have will can may must should comes arrives ships fits keeps holds "
    "with without for from in on at under over near by of to and or but "
    "price order delivery shipping return size colour model brand quality customer store "
    "free fast easy strong simple modern classic daily perfect comfortable durable "
    "man woman child children family friend people city country day week year time "
    "buy sell open close carry wash clean dry cook read write play walk run sit sleep "
    "please check add remove choose pay keep send receive find make take give use "
    "very also only always often never now today here there again more less each every"
)
WORDS = tuple(_VOCABULARY.split())

SHORT = (
    "Add to cart",
    "Free shipping",
    "Only a few left in stock",
    "Proceed to checkout",
    "Size guide",
    "Customer reviews",
    "Red running shoes",
    "Delivery in two days",
    "Return within thirty days",
    "Cotton shirt for men",
)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def sentence(rng: random.Random, index: int, n_words: int, tag: str = "") -> str:
    """One segment of exactly ``n_words`` words (>= 2), the first naming its index."""
    n_words = max(2, n_words)
    label = f"{tag}{index}" if tag else str(index)
    text = f"Item {label}: {_words(rng, n_words - 2)}" if n_words > 2 else f"Item {label}"
    return text[0].upper() + text[1:] + "."


def mixed_lengths(rng: random.Random) -> int:
    """A word count between 2 and 80, short ones most common (a catalogue's mix)."""
    r = rng.random()
    if r < 0.5:
        return rng.randint(2, 12)
    if r < 0.85:
        return rng.randint(13, 40)
    return rng.randint(41, 80)


def segments(
    n: int, *, seed: int = 0, tag: str = "", min_words: int = 2, max_words: int = 80
) -> list[str]:
    """``n`` unique segments of mixed lengths (2-80 words by default)."""
    rng = random.Random(f"{seed}:{tag}")
    out = []
    for i in range(n):
        words = min(max_words, max(min_words, mixed_lengths(rng)))
        out.append(sentence(rng, i, words, tag))
    return out


def fixed_length(n: int, words: int, *, seed: int = 0, tag: str = "") -> list[str]:
    """``n`` unique segments of exactly ``words`` words each."""
    rng = random.Random(f"{seed}:{tag}:fixed{words}")
    return [sentence(rng, i, words, tag) for i in range(n)]


def interactive_requests(n: int, *, seed: int = 0, tag: str = "i") -> list[list[str]]:
    """``n`` interactive requests of 1-5 short unique strings (2-12 words) each."""
    rng = random.Random(f"{seed}:{tag}:interactive")
    out = []
    k = 0
    for _ in range(n):
        texts = []
        for _ in range(rng.randint(1, 5)):
            texts.append(sentence(rng, k, rng.randint(2, 12), tag))
            k += 1
        out.append(texts)
    return out


def phrases(n: int, *, seed: int = 0) -> list[str]:
    """``n`` unique short phrases (e-commerce strings) for the phrase-cache scenario."""
    rng = random.Random(f"{seed}:phrases")
    out = []
    for i in range(n):
        base = SHORT[i % len(SHORT)]
        out.append(f"{base} {_words(rng, rng.randint(0, 4))} {i}".replace("  ", " "))
    return out
