"""Several glossaries applied together (a request's ``glossary_ids``): merged in order, the
first listed winning a term (core/glossary/store.py ``stacked``)."""

from __future__ import annotations

from mtfleet.core.glossary import Glossary, Matcher, validate
from mtfleet.core.glossary.store import STACK, stacked


def make(
    gid: str,
    entries: dict[str, str],
    protected: tuple[str, ...] = (),
    patterns: tuple[str, ...] = (),
) -> Glossary:
    g = validate(
        name=gid,
        source_lang="en",
        target_lang="es",
        entries=list(entries.items()),
        protected=list(protected),
        max_terms=100,
        max_term_chars=50,
        protected_patterns=patterns,
    )
    return g.model_copy(update={"id": gid})


def restored(g: Glossary, text: str) -> str:
    p = Matcher(g).protect(text)
    return p.restore(p.text)


def test_the_first_listed_glossary_wins_a_term_and_every_other_term_applies() -> None:
    a = make("a", {"Shirt": "blusa"}, ("iPhone",), (r"\[[A-Z]+\]",))
    b = make("b", {"shirt": "camiseta", "house": "hogar", "iphone": "teléfono"}, ("Case",))
    ab, ba = stacked([a, b]), stacked([b, a])
    assert restored(ab, "The shirt, the iphone and the case in the house") == (
        "The blusa, the iPhone and the Case in the hogar"
    )
    assert restored(ba, "The shirt, the iphone and the case in the house") == (
        "The camiseta, the teléfono and the Case in the hogar"
    )
    assert ab.entries == {"Shirt": "blusa", "house": "hogar"} and ab.protected == ["iPhone", "Case"]
    assert ab.protected_patterns == [r"\[[A-Z]+\]"]
    # the stack's version names every glossary's, in order: the phrase cache's key part
    assert ab.version == STACK.join([a.version, b.version]) != ba.version
    assert stacked([a]) is a
