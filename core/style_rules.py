"""Style rules: DeepL's stored style rule lists (``/v3/style_rules``, used with ``style_id``),
owned by the API key that made them, as an LLM engine follows them.

A style rule list has a ``name``, the target ``language`` it applies to (a base code, ``en``:
a request into ``EN-US`` or ``EN-GB`` may use it, as on DeepL; any language the fleet knows,
not only DeepL's eight, since an LLM follows rules in any), **configured rules** (DeepL's
predefined options, ``{category: {rule: option}}`` exactly as its clients send them) and up to
200 **custom instructions** (``label``, ``prompt`` of at most 300 characters, optional
``source_language``: the instruction then applies only to text from that language).

Unlike a glossary a style rule changes in place (rename, replace the configured rules, add,
change or delete an instruction). Two numbers follow it:

* ``revision``: DeepL's ``version`` on the wire, 1 when created and one more at every change;
* :attr:`StyleRule.version`: a short hash of what reaches the model (the language and every
  instruction :meth:`StyleRule.instructions` renders, with their source languages), the
  phrase-cache key component: a rename leaves it alone, any change of content changes it, and
  two rules with the same content share it.

A job resolves its ``style_id`` when it is accepted (:meth:`StyleRuleStore.for_job`) and
carries the rule's instructions itself, so a later change or delete never alters work already
accepted; deleting a rule hides it at once.

Limits (DeepL's where it has one): name 1-100 characters, label 1-100, prompt 1-300, 200
instructions, at most 200 configured rules in 16 categories (DeepL documents 7 categories and
about 160 rules in all), identifiers of at most 100 characters and options of at most 200, and
a stored rule of at most :data:`MAX_RULE_BYTES`; a key keeps at most ``max_per_owner`` rules
(:data:`MAX_PER_OWNER` unless the caller says otherwise). Whitespace runs in a prompt or a
label become one space (a prompt is one line of the model's instructions); other control
characters are refused.

Redis: ``mt:stylerule:<style_id>`` (JSON) and ``mt:stylerules:<owner or '-'>`` (the owner's
ids by creation time), built by :func:`rule_key` and :func:`owner_key` here.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis
from pydantic import BaseModel, Field

from mtfleet.core import languages
from mtfleet.core.errors import InvalidInput, JobNotFound
from mtfleet.core.keys import PREFIX
from mtfleet.core.style_rule_sentences import CATEGORIES, sentence

MAX_NAME_CHARS = 100
MAX_LABEL_CHARS = 100
MAX_PROMPT_CHARS = 300
MAX_INSTRUCTIONS = 200
MAX_CATEGORIES = 16
MAX_RULES = 200
MAX_IDENTIFIER_CHARS = 100
MAX_OPTION_CHARS = 200
#: The most one stored rule may take (its JSON, UTF-8): 200 instructions of 300 characters fit.
MAX_RULE_BYTES = 256 * 1024
#: Style rules one API key may keep, unless the store is told otherwise.
MAX_PER_OWNER = 100
#: DeepL's paging of ``GET /v3/style_rules``.
DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 25

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A category or rule: Unicode letters, digits and '_' (DeepL's rules name French words with
# accents); an option may also hold single spaces (one of DeepL's Korean options does).
_IDENTIFIER = re.compile(r"[^\W_]\w*")
_OPTION = re.compile(r"[^\W_]\w*(?: \w+)*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SPACE = re.compile(r"\s+")
_TRANSACTION_TRIES = 50


# --- Redis keys (all under mt:, as :mod:`mtfleet.core.keys` has every other) ------------------


def rule_key(style_id: str) -> str:
    """String (JSON): one style rule (:class:`StyleRule` without its computed version)."""
    return f"{PREFIX}stylerule:{style_id}"


def owner_key(owner: str) -> str:
    """Sorted set: the style rule ids of an API key ('' : made with MT_AUTH=off), scored by
    creation time."""
    return f"{PREFIX}stylerules:{owner or '-'}"


# --- errors -----------------------------------------------------------------------------------


class StyleRuleNotFound(JobNotFound):
    """No such style rule (or custom instruction), or another key's: HTTP 404, word for word
    the same either way."""

    code = "style_rule_not_found"


# --- models -----------------------------------------------------------------------------------


class CustomInstruction(BaseModel):
    id: str
    label: str
    prompt: str
    source_language: str | None = None

    def wire(self) -> dict[str, Any]:
        """As DeepL's API writes it (``source_language`` only when set)."""
        return self.model_dump(exclude_none=True)


class StyleRule(BaseModel):
    style_id: str
    name: str
    language: str  # a base code, lower case: "en", "zh"
    configured_rules: dict[str, dict[str, str]] = Field(default_factory=dict)
    custom_instructions: list[CustomInstruction] = Field(default_factory=list)
    created_at: float
    updated_at: float
    revision: int = 1  # DeepL's "version": one more at every change
    owner: str = ""

    def instructions(self, *, source: str | None = None) -> list[str]:
        """The rule as plain English instructions for an LLM, one per item: each configured
        rule as a sentence (:func:`mtfleet.core.style_rule_sentences.sentence`), in DeepL's
        category order, then each custom instruction's prompt, in the list's order. With
        ``source`` (the request's source language), an instruction made for another source
        language is left out; without it (source not known) every instruction is kept."""
        out = self._sentences()
        base = _base(source) if source else None
        out += [
            ci.prompt
            for ci in self.custom_instructions
            if base is None or ci.source_language is None or ci.source_language == base
        ]
        return out

    @property
    def version(self) -> str:
        """Short hash of what reaches the model (the phrase-cache key component)."""
        body = json.dumps(
            [
                self.language,
                self._sentences(),
                [(ci.source_language, ci.prompt) for ci in self.custom_instructions],
            ],
            ensure_ascii=False,
        )
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def _sentences(self) -> list[str]:
        return [
            sentence(category, rule, option)
            for category, rules in self.configured_rules.items()
            for rule, option in rules.items()
        ]

    def find(self, instruction_id: str) -> int:
        """The position of one of its custom instructions (StyleRuleNotFound otherwise)."""
        for i, ci in enumerate(self.custom_instructions):
            if ci.id == instruction_id:
                return i
        raise StyleRuleNotFound(
            f"style rule {self.style_id} has no custom instruction {instruction_id!r}"
        )


def visible(rule: StyleRule, owner: str) -> bool:
    """A style rule is usable only by the key that made it ('' owner: the API runs without
    keys, and every rule is visible)."""
    return not owner or rule.owner == owner


# --- validation -------------------------------------------------------------------------------


def _base(code: str) -> str:
    """A language's base code as DeepL writes a style rule's: ``EN-US`` -> ``en``,
    ``zh-Hant`` -> ``zh`` (UnsupportedLanguage, a 4xx, for a code the fleet does not know)."""
    return languages.normalize(code).split("-")[0].lower()


def check_language(code: Any, what: str = "language") -> str:
    if not isinstance(code, str) or not code.strip():
        raise InvalidInput(f"{what} is required: a language code such as 'en'")
    return _base(code)


def _text(value: Any, what: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string")
    text = _SPACE.sub(" ", value).strip()
    if not text:
        raise InvalidInput(f"{what} is empty")
    if len(text) > max_chars:
        raise InvalidInput(f"{what} has {len(text)} characters; the limit is {max_chars}")
    if _CONTROL.search(text):
        raise InvalidInput(f"{what} contains a control character")
    return text


def check_name(name: Any) -> str:
    return _text(name, "name", MAX_NAME_CHARS)


def check_instruction(
    label: Any, prompt: Any, source_language: Any = None, *, instruction_id: str | None = None
) -> CustomInstruction:
    """A custom instruction from what a client sent (a new id unless ``instruction_id``)."""
    return CustomInstruction(
        id=instruction_id or str(uuid.uuid4()),
        label=_text(label, "label", MAX_LABEL_CHARS),
        prompt=_text(prompt, "prompt", MAX_PROMPT_CHARS),
        source_language=(
            None
            if source_language is None or source_language == ""
            else check_language(source_language, "source_language")
        ),
    )


def _identifier(value: Any, what: str) -> str:
    if (
        not isinstance(value, str)
        or len(value) > MAX_IDENTIFIER_CHARS
        or not _IDENTIFIER.fullmatch(value)
    ):
        raise InvalidInput(
            f"{what} {str(value)[:40]!r} is not a rule name (letters, digits and '_', at most "
            f"{MAX_IDENTIFIER_CHARS})"
        )
    return value


def check_configured_rules(rules: Any) -> dict[str, dict[str, str]]:
    """Configured rules as DeepL's clients send them, ``{category: {rule: option}}``, checked
    and in a canonical order (DeepL's categories first, in its order, then any other
    category; rules by name). An empty category is dropped. Categories DeepL does not
    document are kept (a newer client's), and rendered as named rules."""
    if rules is None:
        return {}
    if not isinstance(rules, Mapping):
        raise InvalidInput("configured_rules must be an object: {category: {rule: option}}")
    if len(rules) > MAX_CATEGORIES:
        raise InvalidInput(
            f"configured_rules has {len(rules)} categories; the limit is {MAX_CATEGORIES}"
        )
    out: dict[str, dict[str, str]] = {}
    total = 0
    for category, options in rules.items():
        _identifier(category, "configured_rules category")
        if not isinstance(options, Mapping):
            raise InvalidInput(f"configured_rules.{category} must be an object: {{rule: option}}")
        checked: dict[str, str] = {}
        for rule, option in options.items():
            _identifier(rule, f"configured_rules.{category} rule")
            if (
                not isinstance(option, str)
                or len(option) > MAX_OPTION_CHARS
                or not _OPTION.fullmatch(option)
            ):
                raise InvalidInput(
                    f"configured_rules.{category}.{rule}: {str(option)[:40]!r} is not an "
                    f"option (letters, digits and '_', at most {MAX_OPTION_CHARS})"
                )
            checked[rule] = option
        total += len(checked)
        if total > MAX_RULES:
            raise InvalidInput(f"more than {MAX_RULES} configured rules; that is the limit")
        if checked:
            out[category] = dict(sorted(checked.items()))
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def check_style_id(style_id: str) -> str:
    """A client's style id, lower-cased (InvalidInput, a 400, when it is not a UUID at all:
    it never becomes part of a Redis key)."""
    sid = style_id.strip().lower() if isinstance(style_id, str) else ""
    if not _UUID.fullmatch(sid):
        raise InvalidInput(f"style_id {str(style_id)[:64]!r} is not a style rule id (a UUID)")
    return sid


def _dump(rule: StyleRule) -> str:
    raw = rule.model_dump_json()
    if len(raw.encode()) > MAX_RULE_BYTES:
        raise InvalidInput(
            f"this style rule would take {len(raw.encode())} bytes; the most one may take is "
            f"{MAX_RULE_BYTES}"
        )
    return raw


# --- the store --------------------------------------------------------------------------------


class StyleRuleStore:
    """Style rules on the durable Redis (``MT_REDIS_URL``); ``r`` must decode responses.
    Every change is a WATCH/MULTI transaction on the rule's key: two clients changing one rule
    at once both land, in some order, and limits hold."""

    def __init__(self, r: redis.Redis, *, max_per_owner: int = MAX_PER_OWNER) -> None:
        self.r = r
        self.max_per_owner = max_per_owner

    # reading

    def _load(self, style_id: str) -> StyleRule | None:
        raw = self.r.get(rule_key(style_id))
        return StyleRule.model_validate_json(raw) if raw else None

    def get(self, style_id: str, *, owner: str) -> StyleRule:
        """One of ``owner``'s rules (StyleRuleNotFound: none, or another key's; InvalidInput:
        not an id)."""
        sid = check_style_id(style_id)
        rule = self._load(sid)
        if rule is None or not visible(rule, owner):
            raise StyleRuleNotFound(f"style rule {style_id} not found")
        return rule

    def list_for(
        self, owner: str, page: int = 0, page_size: int = DEFAULT_PAGE_SIZE
    ) -> list[StyleRule]:
        """One page of the owner's rules, oldest first (DeepL's paging: ``page`` from 0,
        ``page_size`` 1-25; a page past the end is empty)."""
        if page < 0:
            raise InvalidInput("page must be 0 or more")
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidInput(f"page_size must be 1-{MAX_PAGE_SIZE}")
        start = page * page_size
        ids = [str(i) for i in self.r.zrange(owner_key(owner), start, start + page_size - 1)]
        pipe = self.r.pipeline(transaction=False)
        for sid in ids:
            pipe.get(rule_key(sid))
        return [StyleRule.model_validate_json(raw) for raw in pipe.execute() if raw]

    def for_job(self, style_id: str, *, owner: str, target: str) -> StyleRule:
        """The style rule a request names, checked: StyleRuleNotFound (404) when it is unknown
        to this key, InvalidInput (400 on DeepL's surface, 422 on /v1) when it is made for
        another language than the request's ``target`` (its base language must match:
        ``EN-US`` may use an ``en`` rule)."""
        rule = self.get(style_id, owner=owner)
        wanted = _base(target)
        if rule.language != wanted:
            raise InvalidInput(
                f"style rule {rule.style_id} is for language {rule.language!r}; this request "
                f"translates into {wanted!r}"
            )
        return rule

    # writing

    def create(
        self,
        *,
        owner: str,
        name: Any,
        language: Any,
        configured_rules: Any = None,
        custom_instructions: Sequence[Mapping[str, Any]] | None = None,
    ) -> StyleRule:
        """Check and store a new rule for ``owner`` (InvalidInput: bad input, or the owner
        keeps ``max_per_owner`` rules already)."""
        given = list(custom_instructions or ())
        if len(given) > MAX_INSTRUCTIONS:
            raise InvalidInput(
                f"{len(given)} custom instructions; a style rule holds at most {MAX_INSTRUCTIONS}"
            )
        instructions = []
        for i, ci in enumerate(given):
            if not isinstance(ci, Mapping):
                raise InvalidInput(f"custom_instructions[{i}] must be an object")
            try:
                instructions.append(
                    check_instruction(ci.get("label"), ci.get("prompt"), ci.get("source_language"))
                )
            except InvalidInput as exc:
                raise InvalidInput(f"custom_instructions[{i}]: {exc.message}") from exc
        now = time.time()
        rule = StyleRule(
            style_id=str(uuid.uuid4()),
            name=check_name(name),
            language=check_language(language),
            configured_rules=check_configured_rules(configured_rules),
            custom_instructions=instructions,
            created_at=now,
            updated_at=now,
            owner=owner,
        )
        raw = _dump(rule)
        index = owner_key(owner)

        def write(pipe: redis.client.Pipeline) -> None:
            if int(pipe.zcard(index)) >= self.max_per_owner:
                raise InvalidInput(
                    f"this key has {self.max_per_owner} style rules, the most it may keep; "
                    "delete one first"
                )
            pipe.multi()
            pipe.set(rule_key(rule.style_id), raw)
            pipe.zadd(index, {rule.style_id: now})

        self.r.transaction(write, index)
        return rule

    def _change(
        self, style_id: str, owner: str, change: Callable[[StyleRule], Any]
    ) -> tuple[StyleRule, Any]:
        """Apply ``change`` to one of ``owner``'s rules (it edits the rule in place and
        returns what the caller wants back), bump its revision and store it, atomically."""
        sid = check_style_id(style_id)
        key = rule_key(sid)
        for _ in range(_TRANSACTION_TRIES):
            with self.r.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(key)
                    raw = pipe.get(key)
                    rule = StyleRule.model_validate_json(raw) if raw else None
                    if rule is None or not visible(rule, owner):
                        raise StyleRuleNotFound(f"style rule {style_id} not found")
                    out = change(rule)
                    rule.revision += 1
                    rule.updated_at = max(time.time(), rule.updated_at)
                    body = _dump(rule)
                    pipe.multi()
                    pipe.set(key, body)
                    pipe.execute()
                    return rule, out
                except redis.WatchError:
                    continue
        raise redis.WatchError(f"style rule {style_id} kept changing; retry")

    def update_name(self, style_id: str, name: Any, *, owner: str) -> StyleRule:
        new = check_name(name)

        def rename(rule: StyleRule) -> None:
            rule.name = new

        return self._change(style_id, owner, rename)[0]

    def update_configured_rules(self, style_id: str, rules: Any, *, owner: str) -> StyleRule:
        """Replace the rule's configured rules (``{}`` clears them)."""
        new = check_configured_rules(rules)

        def replace(rule: StyleRule) -> None:
            rule.configured_rules = new

        return self._change(style_id, owner, replace)[0]

    def create_custom_instruction(
        self, style_id: str, *, owner: str, label: Any, prompt: Any, source_language: Any = None
    ) -> CustomInstruction:
        new = check_instruction(label, prompt, source_language)

        def add(rule: StyleRule) -> None:
            if len(rule.custom_instructions) >= MAX_INSTRUCTIONS:
                raise InvalidInput(
                    f"style rule {rule.style_id} has {MAX_INSTRUCTIONS} custom instructions, "
                    "the most it may hold"
                )
            rule.custom_instructions.append(new)

        self._change(style_id, owner, add)
        return new

    def get_custom_instruction(
        self, style_id: str, instruction_id: str, *, owner: str
    ) -> CustomInstruction:
        rule = self.get(style_id, owner=owner)
        return rule.custom_instructions[rule.find(instruction_id)]

    def update_custom_instruction(
        self,
        style_id: str,
        instruction_id: str,
        *,
        owner: str,
        label: Any,
        prompt: Any,
        source_language: Any = None,
    ) -> CustomInstruction:
        """Replace one custom instruction (its id stays)."""

        def replace(rule: StyleRule) -> CustomInstruction:
            i = rule.find(instruction_id)
            new = check_instruction(
                label, prompt, source_language, instruction_id=rule.custom_instructions[i].id
            )
            rule.custom_instructions[i] = new
            return new

        out: CustomInstruction = self._change(style_id, owner, replace)[1]
        return out

    def delete_custom_instruction(self, style_id: str, instruction_id: str, *, owner: str) -> None:
        def remove(rule: StyleRule) -> None:
            del rule.custom_instructions[rule.find(instruction_id)]

        self._change(style_id, owner, remove)

    def delete(self, style_id: str, *, owner: str) -> None:
        """Delete one of ``owner``'s rules; requests can no longer name it (work already
        accepted carries its instructions). StyleRuleNotFound when there is no such rule."""
        rule = self.get(style_id, owner=owner)
        pipe = self.r.pipeline(transaction=True)
        pipe.delete(rule_key(rule.style_id))
        pipe.zrem(owner_key(rule.owner), rule.style_id)
        deleted, _ = pipe.execute()
        if not deleted:
            raise StyleRuleNotFound(f"style rule {style_id} not found")

    def delete_owned(self, owner: str) -> int:
        """Delete every rule of ``owner`` (an API key being deleted); how many there were."""
        index = owner_key(owner)
        ids = [str(i) for i in self.r.zrange(index, 0, -1)]
        pipe = self.r.pipeline(transaction=True)
        for sid in ids:
            pipe.delete(rule_key(sid))
        pipe.delete(index)
        pipe.execute()
        return len(ids)
