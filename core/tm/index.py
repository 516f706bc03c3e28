"""The in-memory index a process looks segments up in: every pair of a memory at one version,
and a token index that finds the best pairs without scoring them all, exactly.

**Scores** are :func:`mtfleet.core.tm.text.similarity`'s (the mean of rapidfuzz's
``fuzz.ratio`` over word tokens with case and without). Each distinct token of the memory is a
number, and a text is the string of its tokens' numbers as code points, so rapidfuzz compares
token strings at the speed of its character path (a token the memory does not have is a
number no stored text holds). Each pair is held twice, as its tokens and as its casefolded
tokens; the index is over the casefolded ones.

**Bounds.** Folding case only makes more tokens equal, so a pair's score is at most its
casefolded ratio, ``200 * LCS / (na + nb)`` for a segment of ``na`` tokens and a pair of
``nb``; and the longest common subsequence is at most the number of tokens the two share,
counted with repeats (the second "the" of a segment is the token ("the", 2)). So
``bound = 200 * shared / (na + nb)`` is at least the score, and a pair can reach the floor only
if ``nb`` lies in ``[ceil(floor * na / (200 - floor)), floor(200 * na / floor) - na]``.

**A lookup** counts, for every pair in that length range at once, the tokens it shares with the
segment: pairs are numbered by their token count, so the range is one slice of ids, and each
segment token's posting list (the pairs holding it, sorted) is cut to the range by bisection
and counted with ``numpy.bincount``. The pairs whose bound reaches the floor are the only ones
that can be the match or an example; they are scored in the order of their bounds, best first
(casefolded with the floor as rapidfuzz's cutoff, then with case), and scoring stops as soon as
the next bound is below both the best score at or above the threshold found so far (or the
threshold) and the ``k``-th best example below it (or the floor). Nothing left can change the
answer, so the match and the examples are exactly what scoring every pair would give
(tests/unit/test_tm_matching.py checks both against rapidfuzz over all pairs); most lookups
score a few dozen pairs.

**Changes** (pairs added or replaced) go into a small overlay on top of the base index, so a
correction costs its own tokens, not a rebuild; past :data:`OVERLAY_SHARE` of the base (at
least :data:`OVERLAY_MIN` pairs) the next change rebuilds the base. An index never changes: a
change makes a new :class:`TMIndex` that shares the old one's base.

Ties between equal scores go to the newer pair (added or replaced last).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz, process

from mtfleet.core.tm.placeables import split, substitute
from mtfleet.core.tm.text import combined, normalize, tokens

if TYPE_CHECKING:
    import numpy as np

#: The overlay of changes is folded into a new base past this share of the base's pairs...
OVERLAY_SHARE = 0.05
#: ... and never below this many.
OVERLAY_MIN = 1_000
#: Pairs scored in the first batch of a lookup (each next batch twice as many, up to _BATCH_MAX).
_BATCH = 32
_BATCH_MAX = 1024
#: Slack when a bound (a float) is compared with a score (rapidfuzz's float of the same value).
_EPS = 1e-9

# Token numbers as code points skip the surrogates (a str cannot carry them everywhere).
_SURROGATES = 0xD800
_GAP = 0x800
#: The number no stored text holds: every token a memory does not know.
_UNKNOWN = 0x10FFFF - _GAP
#: Distinct tokens an index can write as a string; past it texts are tuples of ints (slower).
MAX_STR_TOKENS = _UNKNOWN


def _chars(ids: list[int]) -> str:
    return "".join([chr(i) if i < _SURROGATES else chr(i + _GAP) for i in ids])


@dataclass(frozen=True)
class TMMatch:
    """A stored pair and its score against the segment looked up (0-100,
    :func:`mtfleet.core.tm.text.similarity`): ``source`` as stored (normalized), ``target``
    exactly as stored."""

    source: str
    target: str
    score: float


@dataclass(frozen=True)
class TMLookup:
    """The best pair scoring at or above the threshold (None: none); and when there is none,
    the ``k`` best pairs scoring at or above the floor, best first (with a match the segment
    is served from the memory and no model sees examples, so none are looked for)."""

    match: TMMatch | None
    examples: list[TMMatch]


@dataclass
class _Base:
    """An immutable index of pairs: ids 0..n-1 in the order of their token counts."""

    text_mode: bool  # texts as strings of code points (else tuples of token numbers)
    exact_vocab: dict[str, int]
    folded_vocab: dict[str, int]
    codes: list[Any]  # each pair's tokens, as compared
    folded: list[Any]  # each pair's casefolded tokens
    lens: np.ndarray  # each pair's token count (ascending)
    lens64: np.ndarray  # the same, as int64 (what the bounds are computed in)
    first: list[int]  # first[L]: the first id with at least L tokens (len(first) = max + 2)
    sources: list[str]
    targets: list[str]
    seqs: list[int]  # age: a larger one is newer
    keys: dict[tuple[int, int], int]  # (folded token, k-th occurrence) -> its posting list
    starts: np.ndarray  # posting list j is ids[starts[j]:starts[j + 1]] (ascending)
    ids: np.ndarray
    by_source: dict[str, int]
    # the sources with placeables by the text around them (:meth:`TMIndex.exact`; made on
    # first use: a memory looked up only for texts without placeables never needs it)
    skeletons: dict[tuple[str, ...], list[int]] | None = None

    @property
    def n(self) -> int:
        return len(self.codes)

    def encode(self, numbers: list[int]) -> Any:
        return _chars(numbers) if self.text_mode else tuple(numbers)


@dataclass
class _Overlay:
    """Pairs changed since the base was built (ids from ``base.n`` on for new sources)."""

    exact_vocab: dict[str, int] = field(default_factory=dict)  # tokens the base does not know
    folded_vocab: dict[str, int] = field(default_factory=dict)
    codes: list[Any] = field(default_factory=list)
    folded: list[Any] = field(default_factory=list)
    lens: list[int] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    postings: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    by_source: dict[str, int] = field(default_factory=dict)
    replaced: dict[int, tuple[str, int]] = field(default_factory=dict)  # base id -> target, seq

    def copy(self) -> _Overlay:
        return _Overlay(
            dict(self.exact_vocab),
            dict(self.folded_vocab),
            list(self.codes),
            list(self.folded),
            list(self.lens),
            list(self.sources),
            list(self.targets),
            list(self.seqs),
            dict(self.postings),  # its lists are copied when they change
            dict(self.by_source),
            dict(self.replaced),
        )

    @property
    def size(self) -> int:
        return len(self.codes) + len(self.replaced)


def _keys(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """Each token with its occurrence number: (the, 0), (cat, 0), (the, 1)."""
    seen: dict[int, int] = {}
    out = []
    for i in numbers:
        k = seen.get(i, 0)
        seen[i] = k + 1
        out.append((i, k))
    return out


def _pick(items: list[Any], ids: Sequence[int]) -> list[Any]:
    """``[items[i] for i in ids]``, in C."""
    if not ids:
        return []
    got = itemgetter(*ids)(items)
    return list(got) if len(ids) > 1 else [got]


def _numbers(toks: list[str], vocab: dict[str, int]) -> list[int]:
    out = []
    for tok in toks:
        i = vocab.get(tok)
        if i is None:
            i = vocab[tok] = len(vocab)
        out.append(i)
    return out


def _skeletons(sources: Iterable[tuple[int, str]]) -> dict[tuple[str, ...], list[int]]:
    """The ids of the sources with placeables, by the text around their placeables."""
    out: dict[tuple[str, ...], list[int]] = {}
    for i, source in sources:
        pieces, placeables = split(source)
        if placeables:
            out.setdefault(pieces, []).append(i)
    return out


def _build(pairs: Sequence[tuple[str, str]]) -> _Base:
    # numpy is imported where it is used (here and in _candidates): a worker or an API that
    # looks nothing up never loads it (0.09 s of each process's start)
    import numpy as np

    exact: dict[str, int] = {}
    folded: dict[str, int] = {}
    numbered = []
    for source, _ in pairs:
        toks = tokens(source)
        numbered.append((_numbers(toks, exact), _numbers([t.casefold() for t in toks], folded)))
    text_mode = len(exact) < MAX_STR_TOKENS
    encode = _chars if text_mode else tuple
    order = sorted(range(len(pairs)), key=lambda p: len(numbered[p][0]))
    codes: list[Any] = []
    folded_codes: list[Any] = []
    lens: list[int] = []
    sources: list[str] = []
    targets: list[str] = []
    seqs: list[int] = []
    postings: dict[tuple[int, int], list[int]] = {}
    for new_id, p in enumerate(order):
        numbers, folded_numbers = numbered[p]
        for key in _keys(folded_numbers):
            found = postings.get(key)
            if found is None:
                postings[key] = [new_id]
            else:
                found.append(new_id)
        codes.append(encode(numbers))
        folded_codes.append(encode(folded_numbers))
        lens.append(len(numbers))
        sources.append(pairs[p][0])
        targets.append(pairs[p][1])
        seqs.append(p)
    longest = lens[-1] if lens else 0
    first = [0] * (longest + 2)
    j = 0
    for length in range(longest + 2):
        while j < len(lens) and lens[j] < length:
            j += 1
        first[length] = j
    keys = {key: j for j, key in enumerate(postings)}
    sizes = np.fromiter((len(v) for v in postings.values()), dtype=np.int64, count=len(postings))
    starts = np.zeros(len(postings) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    ids = np.fromiter(
        (i for v in postings.values() for i in v), dtype=np.int32, count=int(starts[-1])
    )
    return _Base(
        text_mode,
        exact,
        folded,
        codes,
        folded_codes,
        np.array(lens, dtype=np.int32),
        np.array(lens, dtype=np.int64),
        first,
        sources,
        targets,
        seqs,
        keys,
        starts,
        ids,
        {s: i for i, s in enumerate(sources)},
    )


class TMIndex:
    """One memory at one version, to look segments up in (thread-safe: it never changes)."""

    def __init__(
        self,
        tm_id: str,
        version: str,
        base: _Base,
        overlay: _Overlay | None = None,
        *,
        gen: int = 0,
        log_pos: int = 0,
    ) -> None:
        self.tm_id = tm_id
        self.version = version
        self._base = base
        self._overlay = overlay or _Overlay()
        self.gen = gen  # the stored base it was loaded from (store.py)
        self.log_pos = log_pos  # the stored changes it holds on top of that base
        self._skeletons: dict[tuple[str, ...], list[int]] | None = None  # the overlay's

    @classmethod
    def build(
        cls,
        tm_id: str,
        version: str,
        pairs: Sequence[tuple[str, str]],
        *,
        gen: int = 0,
        log_pos: int = 0,
    ) -> TMIndex:
        """An index of ``pairs`` (normalized sources, unique, oldest first)."""
        return cls(tm_id, version, _build(pairs), gen=gen, log_pos=log_pos)

    def __len__(self) -> int:
        return self._base.n + len(self._overlay.codes)

    def _id_of(self, source: str) -> int | None:
        found = self._overlay.by_source.get(source)
        return found if found is not None else self._base.by_source.get(source)

    def target_of(self, source: str) -> str | None:
        """The stored target of a (normalized) source, None when there is none."""
        i = self._id_of(source)
        return None if i is None else self._pair(i)[1]

    def exact(self, text: str) -> TMMatch | None:
        """The pair whose source is ``text`` once ``text``'s placeables (numbers, placeholders,
        inline tags...) are carried over, with its target carrying them
        (:mod:`mtfleet.core.tm.placeables`), scoring 100; the newest of several. None: the
        memory has no such pair (then no stored target is ``text``'s translation)."""
        norm = normalize(text)
        target = self.target_of(norm)
        if target is not None:
            return TMMatch(norm, target, 100.0)
        pieces, mine = split(norm)
        if not mine:
            return None
        found = [
            *self._base_skeletons().get(pieces, ()),
            *self._overlay_skeletons().get(pieces, ()),
        ]
        for source, stored, _ in sorted(map(self._pair, found), key=itemgetter(2), reverse=True):
            carried = substitute(stored, split(source)[1], mine)
            if carried is not None:
                return TMMatch(source, carried, 100.0)
        return None

    def _base_skeletons(self) -> dict[tuple[str, ...], list[int]]:
        base = self._base
        if base.skeletons is None:
            base.skeletons = _skeletons(enumerate(base.sources))
        return base.skeletons

    def _overlay_skeletons(self) -> dict[tuple[str, ...], list[int]]:
        if self._skeletons is None:
            n = self._base.n
            self._skeletons = _skeletons(enumerate(self._overlay.sources, n))
        return self._skeletons

    def _pair(self, i: int) -> tuple[str, str, int]:
        """Source, target and age of pair ``i``."""
        base, ov = self._base, self._overlay
        if i >= base.n:
            j = i - base.n
            return ov.sources[j], ov.targets[j], ov.seqs[j]
        changed = ov.replaced.get(i)
        if changed is not None:
            return base.sources[i], changed[0], changed[1]
        return base.sources[i], base.targets[i], base.seqs[i]

    def pairs(self) -> list[tuple[str, str]]:
        """Every pair, oldest first (the order the memory stores them in)."""
        rows = [self._pair(i) for i in range(len(self))]
        rows.sort(key=lambda row: row[2])
        return [(s, t) for s, t, _ in rows]

    def _next_seq(self) -> int:
        ov = self._overlay
        newest = max(ov.seqs, default=-1)
        newest = max(newest, max((seq for _, seq in ov.replaced.values()), default=-1))
        return max(newest, self._base.n - 1) + 1

    def with_changes(
        self, version: str, changes: Iterable[tuple[str, str]], *, log_pos: int
    ) -> TMIndex:
        """A new index: this one with ``changes`` (normalized source, target) added or
        replacing pairs of the same source, at ``version``."""
        changes = list(changes)
        base = self._base
        ov = self._overlay.copy()
        seq = self._next_seq()
        for source, target in changes:
            i = ov.by_source.get(source)
            if i is not None:
                ov.targets[i - base.n] = target
                ov.seqs[i - base.n] = seq
            elif source in base.by_source:
                ov.replaced[base.by_source[source]] = (target, seq)
            else:
                toks = tokens(source)
                numbers = self._extend(toks, base.exact_vocab, ov.exact_vocab)
                folded = [t.casefold() for t in toks]
                folded_numbers = self._extend(folded, base.folded_vocab, ov.folded_vocab)
                if base.text_mode and len(base.exact_vocab) + len(ov.exact_vocab) >= MAX_STR_TOKENS:
                    return self._rebuilt(version, log_pos, self._overlay, changes)
                new_id = base.n + len(ov.codes)
                for key in _keys(folded_numbers):
                    ov.postings[key] = [*ov.postings.get(key, ()), new_id]
                ov.codes.append(base.encode(numbers))
                ov.folded.append(base.encode(folded_numbers))
                ov.lens.append(len(numbers))
                ov.sources.append(source)
                ov.targets.append(target)
                ov.seqs.append(seq)
                ov.by_source[source] = new_id
            seq += 1
        if ov.size > max(OVERLAY_MIN, OVERLAY_SHARE * base.n):
            return self._rebuilt(version, log_pos, ov, [])
        return TMIndex(self.tm_id, version, base, ov, gen=self.gen, log_pos=log_pos)

    @staticmethod
    def _extend(toks: list[str], known: dict[str, int], added: dict[str, int]) -> list[int]:
        out = []
        for tok in toks:
            i = known.get(tok)
            if i is None:
                i = added.get(tok)
                if i is None:
                    i = added[tok] = len(known) + len(added)
            out.append(i)
        return out

    def _rebuilt(
        self, version: str, log_pos: int, overlay: _Overlay, changes: list[tuple[str, str]]
    ) -> TMIndex:
        """A new base of every pair: the base with ``overlay``, then ``changes``."""
        current = TMIndex(self.tm_id, self.version, self._base, overlay)
        merged = dict(current.pairs())
        for source, target in changes:
            merged.pop(source, None)
            merged[source] = target
        return TMIndex.build(
            self.tm_id, version, list(merged.items()), gen=self.gen, log_pos=log_pos
        )

    def _query(self, toks: list[str], known: dict[str, int], added: dict[str, int]) -> list[int]:
        unknown = _UNKNOWN if self._base.text_mode else -1
        out = []
        for tok in toks:
            i = known.get(tok)
            out.append(i if i is not None else added.get(tok, unknown))
        return out

    def _candidates(
        self, keys: list[tuple[int, int]], na: int, f: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ids of the pairs whose bound reaches ``f``, and their bounds, best first."""
        import numpy as np

        base, ov = self._base, self._overlay
        lo, hi = -(-f * na // (200 - f)), (200 * na) // f - na
        # the base: every pair of lo..hi tokens at once
        first, longest = base.first, len(base.first) - 2
        a = first[min(lo, longest + 1)]
        b = first[min(hi, longest) + 1] if hi >= 0 else 0
        parts = []
        if a < b:
            starts, every = base.starts, base.ids
            for key in keys:
                j = base.keys.get(key)
                if j is not None:
                    parts.append(every[starts[j] : starts[j + 1]])
        if parts:
            # (counting every pair of the lists is cheaper than cutting each list to a..b)
            shared = np.bincount(np.concatenate(parts), minlength=base.n)[a:b]
            size = base.lens64[a:b] + na
            found = np.flatnonzero(200 * shared >= f * size)
            ids = found + a
            bounds = 200.0 * shared[found] / size[found]
        else:
            ids = np.zeros(0, dtype=np.int64)
            bounds = np.zeros(0)
        # the overlay: few pairs, counted here
        if ov.postings:
            counted: Counter[int] = Counter()
            for key in keys:
                found_ov = ov.postings.get(key)
                if found_ov:
                    counted.update(found_ov)
            more = []
            for i, c in counted.items():
                size_i = na + ov.lens[i - base.n]
                if 200 * c >= f * size_i:
                    more.append((i, 200.0 * c / size_i))
            if more:
                ids = np.concatenate([ids, np.array([i for i, _ in more], dtype=np.int64)])
                bounds = np.concatenate([bounds, np.array([u for _, u in more])])
        order = np.argsort(-bounds, kind="stable")
        return ids[order], bounds[order]

    def lookup(self, text: str, threshold: int = 75, k: int = 5, floor: int = 50) -> TMLookup:
        """The match for ``text`` (the best pair scoring at least ``threshold``; the newer
        of equals) or, when there is none, up to ``k`` examples (the best pairs scoring at
        least ``floor``), best first. ``threshold`` and ``floor`` are 1-100 (0 is taken as 1:
        a pair must share a token to count), ``floor`` at most ``threshold``."""
        t = min(max(int(threshold), 1), 100)
        f = min(max(int(floor), 1), t)
        k = max(int(k), 0)
        toks = tokens(normalize(text))
        na = len(toks)
        base, ov = self._base, self._overlay
        if not na or not len(self):
            return TMLookup(None, [])
        numbers = self._query(toks, base.exact_vocab, ov.exact_vocab)
        folded_numbers = self._query(
            [x.casefold() for x in toks], base.folded_vocab, ov.folded_vocab
        )
        unknown = _UNKNOWN if base.text_mode else -1
        keys = [key for key in _keys(folded_numbers) if key[0] != unknown]
        low = f if k else t  # the lowest score that matters (no examples asked: the match's)
        ids, bounds = self._candidates(keys, na, low)
        query, folded_query = base.encode(numbers), base.encode(folded_numbers)
        n = base.n
        best: tuple[float, int, int] | None = None  # score, age, id
        below: list[tuple[float, int, int]] = []  # the best examples so far, best first
        pos, size = 0, _BATCH
        while pos < len(ids):
            bound = float(bounds[pos]) + _EPS
            wants_match = bound >= (best[0] if best else t)
            wants_examples = (
                best is None and k > 0 and bound >= (below[-1][0] if len(below) >= k else f)
            )
            if not (wants_match or wants_examples):
                break
            batch = ids[pos : pos + size].tolist()
            pos += size
            size = min(size * 2, _BATCH_MAX)
            in_base = [i for i in batch if i < n]
            in_overlay = [i for i in batch if i >= n]
            chosen = in_base + in_overlay
            folded = _pick(base.folded, in_base) + [ov.folded[i - n] for i in in_overlay]
            kept = process.extract(
                folded_query, folded, scorer=fuzz.ratio, processor=None, score_cutoff=low,
                limit=None,
            )  # fmt: skip
            for _, without_case, p in kept:
                i = chosen[p]
                code = base.codes[i] if i < n else ov.codes[i - n]
                score = combined(fuzz.ratio(query, code), without_case)
                if score < low:
                    continue
                seq = self._pair(i)[2]
                if score >= t:
                    if best is None or (score, seq) > best[:2]:
                        best = (score, seq, i)
                elif best is None and k:
                    below.append((score, seq, i))
                    below.sort(reverse=True)
                    del below[k:]
        if best is not None:
            source, target, _ = self._pair(best[2])
            return TMLookup(TMMatch(source, target, best[0]), [])
        examples = []
        for score, _, i in below:
            source, target, _ = self._pair(i)
            examples.append(TMMatch(source, target, score))
        return TMLookup(None, examples)
