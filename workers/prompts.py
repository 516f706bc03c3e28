"""Translation prompts.

Hunyuan-MT-7B gets exactly the two templates of its model card, as a single user turn with no
system prompt:

* ZH<=>XX (Chinese on either side):
  ``把下面的文本翻译成<target_language>，不要额外解释。\\n\\n<source_text>``
  with the target's Chinese name;
* XX<=>XX: ``Translate the following segment into <target_language>, without additional
  explanation.\\n\\n<source_text>`` with the target's English name.

Other instruction models get a generic instruction naming both languages, wrapped in the
model's own chat template. Bump ``PROMPT_VERSION`` whenever a template changes: it is part of
the model fingerprint, so the phrase cache never serves answers from an older prompt.
"""

from __future__ import annotations

from typing import Literal, Protocol

from core import languages

PROMPT_VERSION = "1"
PromptStyle = Literal["hunyuan", "chat"]


class ChatTemplater(Protocol):
    def apply_chat_template(
        self, conversation: list[dict[str, str]], *, tokenize: bool, add_generation_prompt: bool
    ) -> str: ...


def resolve_style(configured: str, model: str) -> PromptStyle:
    if configured in ("hunyuan", "chat"):
        return configured  # type: ignore[return-value]
    return "hunyuan" if "hunyuan-mt" in model.lower() else "chat"


def instruction(text: str, source: str, target: str, style: PromptStyle) -> str:
    """The user-turn text for one segment."""
    tgt = languages.get(target)
    if style == "hunyuan":
        if source in languages.CHINESE or target in languages.CHINESE:
            return f"把下面的文本翻译成{tgt.chinese}，不要额外解释。\n\n{text}"
        return (
            f"Translate the following segment into {tgt.english}, "
            f"without additional explanation.\n\n{text}"
        )
    src = languages.get(source)
    return (
        f"Translate the following {src.english} text into {tgt.english}. "
        f"Reply with the translation only.\n\n{text}"
    )


def render(
    text: str, source: str, target: str, style: PromptStyle, tokenizer: ChatTemplater | None
) -> str:
    """The full prompt string: the instruction inside the model's chat template when it has one."""
    user = instruction(text, source, target, style)
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return user
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
    )
