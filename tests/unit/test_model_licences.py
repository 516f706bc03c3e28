"""docs/engines.md's "Which model, where": each model the page names gets the prompt the page
says (its name picks it, or its config and tokenizer), and each prompt renders, from the code,
as the page writes it."""

from __future__ import annotations

import re

import pytest

from mtfleet.core import languages
from mtfleet.workers import prompts
from mtfleet.workers.engines.hf_families import Family, family_of
from tests.conftest import ROOT

PAGE = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
SECTION = PAGE.split("## Which model, where", 1)[1].split("\n## ", 1)[0]
SEGMENT = "The sole is soft."
#: The encoder-decoder families as the transformers engine finds them: a config's model_type
#: and a tokenizer vocabulary with the family's codes.
SEQ2SEQ: dict[str, Family] = {
    "madlad": family_of("t5", True, {"<2es>": 1, "<2de>": 2}, name="madlad400-3b-mt"),
    "nllb": family_of("m2m_100", True, {"eng_Latn": 1, "spa_Latn": 2}, name="nllb-200"),
}


def _rows(header: str) -> list[list[str]]:
    """The cells of the section's table whose header row starts with ``header``."""
    lines = SECTION.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


MODELS = {r[0].strip("`"): r for r in _rows("model")}
TEMPLATES = {r[0].strip("`"): r[1] for r in _rows("prompt")}


def _templates(cell: str) -> list[str]:
    """The code spans of a prompt cell, with the page's ``\\n`` as line breaks."""
    return [t.replace("\\n", "\n") for t in re.findall(r"`([^`]*\{text\}[^`]*)`", cell)]


def test_the_page_names_the_models_and_the_prompts() -> None:
    assert "tencent/Hunyuan-MT-7B" in MODELS and len(MODELS) >= 4
    hunyuan = MODELS["tencent/Hunyuan-MT-7B"]
    assert hunyuan[1] == "Tencent Hunyuan Community License"
    assert "European Union, the United Kingdom or South Korea" in hunyuan[2]
    assert any(r[1] == "Apache-2.0" and "vllm" in r[3] for r in MODELS.values())
    assert {r[4].strip("`") for r in MODELS.values()} <= set(TEMPLATES)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_each_model_gets_the_prompt_the_page_says(model: str) -> None:
    said = MODELS[model][4].strip("`")
    if said in SEQ2SEQ:
        assert MODELS[model][3] == "`transformers`"  # only that engine runs them
        assert SEQ2SEQ[said].name == said
    else:
        assert prompts.resolve_style("auto", model) == said
        assert prompts.resolve_style("auto", f"/models/{model.split('/')[-1].lower()}") == said


def test_hunyuan_renders_as_the_page_writes_it() -> None:
    plain, chinese = _templates(TEMPLATES["hunyuan"])
    got = prompts.instruction(SEGMENT, "en", "de", "hunyuan")
    assert got == plain.format(target="German", text=SEGMENT)
    for source, target in (("en", "zh"), ("zh", "de")):
        got = prompts.instruction(SEGMENT, source, target, "hunyuan")
        zh = languages.get(target).chinese
        assert got == chinese.format(target_zh=zh, text=SEGMENT), (source, target)


def test_chat_renders_as_the_page_writes_it() -> None:
    (template,) = _templates(TEMPLATES["chat"])
    got = prompts.instruction(SEGMENT, "en", "es", "chat")
    assert got == template.format(source="English", target="Spanish", text=SEGMENT)
    # one user turn, no system prompt, inside the model's own chat template
    turns: list[list[dict[str, str]]] = []

    class Templater:
        chat_template = "{{ messages }}"

        def apply_chat_template(
            self, conversation: list[dict[str, str]], *, tokenize: bool, add_generation_prompt: bool
        ) -> str:
            turns.append(conversation)
            return "".join(m["content"] for m in conversation)

    assert prompts.render(SEGMENT, "en", "es", "chat", Templater()) == got
    assert turns == [[{"role": "user", "content": got}]]


def test_the_encoder_decoder_inputs_are_as_the_page_writes_them() -> None:
    (madlad,) = _templates(TEMPLATES["madlad"])
    got = SEQ2SEQ["madlad"].source_text(SEGMENT, "es")
    assert got == madlad.format(target_code="es", text=SEGMENT) == "<2es> The sole is soft."
    (nllb,) = _templates(TEMPLATES["nllb"])
    nl = SEQ2SEQ["nllb"]
    assert nl.source_text(SEGMENT, "es") == nllb.format(text=SEGMENT) == SEGMENT
    assert "`eng_Latn`" in TEMPLATES["nllb"] and nl.src_lang["en"] == "eng_Latn"
    assert "`spa_Latn`" in TEMPLATES["nllb"] and nl.forced_bos["es"] == "spa_Latn"
