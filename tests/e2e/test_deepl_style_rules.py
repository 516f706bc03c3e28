"""DeepL's style rules (``/v3/style_rules``) as its official Python client (``deepl``,
unchanged but for ``server_url``) calls them, against a real ``mtfleet api`` with API keys
required: every style-rule call of ``DeepLClient``, DeepL's paging, one key never reaching
another's rules, and bad input answered as DeepL answers it (400, which the client raises)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import deepl
import pytest
from deepl.api_data import CustomInstruction, StyleRuleInfo

from mtfleet.fleet.localfleet import LocalFleet
from tests.e2e.fleet_control import apertium_fleet

RULES = {
    "dates_and_times": {"time_format": "use_24_hour_clock", "calendar_era": "use_bc_and_ad"},
    "punctuation": {"serial_comma": "use"},
}
TONE = {"label": "Tone", "prompt": "Use a friendly, diplomatic tone.", "source_language": "en"}


@pytest.fixture(scope="module")
def fleet(redis_server: str) -> Iterator[LocalFleet]:
    env = {"MT_AUTH": "required", "MT_AUTH_CACHE_S": "0"}
    with apertium_fleet(redis_server, env) as f:
        yield f


@pytest.fixture(scope="module")
def client(fleet: LocalFleet) -> deepl.DeepLClient:
    return deepl.DeepLClient(fleet.create_api_key("styles-a"), server_url=fleet.api_url)


@pytest.fixture(scope="module")
def other(fleet: LocalFleet) -> deepl.DeepLClient:
    return deepl.DeepLClient(fleet.create_api_key("styles-b"), server_url=fleet.api_url)


@pytest.fixture
def clean(client: deepl.DeepLClient) -> Iterator[None]:
    """Each test starts and ends with no rules of the first key's."""
    for rule in client.get_all_style_rules(page_size=25):
        client.delete_style_rule(rule)
    yield
    for rule in client.get_all_style_rules(page_size=25):
        client.delete_style_rule(rule)


def status_of(call: object) -> int | None:
    with pytest.raises(deepl.DeepLException) as err:
        call()  # type: ignore[operator]
    return err.value.http_status_code


@pytest.mark.usefixtures("clean")
def test_every_style_rule_call_of_the_client(client: deepl.DeepLClient) -> None:
    made = client.create_style_rule(
        "Technical docs", "en", configured_rules=RULES, custom_instructions=[TONE]
    )
    assert isinstance(made, StyleRuleInfo)
    assert (made.name, made.language, made.version) == ("Technical docs", "en", 1)
    assert made.creation_time == made.updated_time
    assert abs(made.creation_time - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=1)
    assert made.configured_rules is not None
    assert made.configured_rules.dates_and_times == RULES["dates_and_times"]
    assert made.configured_rules.punctuation == {"serial_comma": "use"}
    assert made.configured_rules.numbers == {}
    [tone] = made.custom_instructions
    assert (tone.label, tone.prompt, tone.source_language) == (
        TONE["label"], TONE["prompt"], "en",
    )  # fmt: skip
    assert tone.id

    got = client.get_style_rule(made.style_id)
    assert (got.style_id, got.name, got.version) == (made.style_id, made.name, 1)
    assert got.custom_instructions[0].id == tone.id

    renamed = client.update_style_rule_name(made, "Docs")
    assert (renamed.name, renamed.version) == ("Docs", 2)
    assert renamed.updated_time >= made.updated_time

    rules = client.update_style_rule_configured_rules(
        made, {"numbers": {"decimal_separator": "use_comma_as_decimal_separator"}}
    )
    assert rules.version == 3 and rules.configured_rules is not None
    assert rules.configured_rules.numbers == {"decimal_separator": "use_comma_as_decimal_separator"}
    assert rules.configured_rules.dates_and_times == {}  # replaced, not merged

    added = client.create_style_rule_custom_instruction(
        made, "Currency", "Put currency symbols before the number."
    )
    assert isinstance(added, CustomInstruction) and added.id and added.source_language is None
    fetched = client.get_style_rule_custom_instruction(made, added.id)
    assert (fetched.id, fetched.label, fetched.prompt) == (added.id, added.label, added.prompt)
    changed = client.update_style_rule_custom_instruction(
        made,
        added.id,
        "Currency",
        "Put ISO currency codes before the number.",
        source_language="de",
    )
    assert (changed.id, changed.prompt, changed.source_language) == (
        added.id, "Put ISO currency codes before the number.", "de",
    )  # fmt: skip
    now = client.get_style_rule(made)
    assert now.version == 5
    assert [c.prompt for c in now.custom_instructions] == [TONE["prompt"], changed.prompt]

    client.delete_style_rule_custom_instruction(made, tone.id)
    assert [c.id for c in client.get_style_rule(made).custom_instructions] == [added.id]
    assert status_of(lambda: client.get_style_rule_custom_instruction(made, tone.id)) == 404

    listed = client.get_all_style_rules()
    assert [r.style_id for r in listed] == [made.style_id]
    assert listed[0].configured_rules is None and listed[0].custom_instructions == []
    detailed = client.get_all_style_rules(detailed=True)
    assert detailed[0].configured_rules is not None
    assert detailed[0].configured_rules.numbers == rules.configured_rules.numbers
    assert [c.id for c in detailed[0].custom_instructions] == [added.id]

    client.delete_style_rule(made)
    assert status_of(lambda: client.get_style_rule(made)) == 404
    assert status_of(lambda: client.delete_style_rule(made)) == 404
    assert client.get_all_style_rules() == []


@pytest.mark.usefixtures("clean")
def test_paging_as_the_client_asks(client: deepl.DeepLClient) -> None:
    made = [client.create_style_rule(f"rule {i:02d}", "de").style_id for i in range(12)]
    assert [r.style_id for r in client.get_all_style_rules()] == made[:10]  # DeepL's default
    assert [r.style_id for r in client.get_all_style_rules(page=1)] == made[10:]
    assert [r.style_id for r in client.get_all_style_rules(page=1, page_size=5)] == made[5:10]
    assert [r.style_id for r in client.get_all_style_rules(page_size=25)] == made
    assert client.get_all_style_rules(page=3, page_size=5) == []
    assert status_of(lambda: client.get_all_style_rules(page_size=26)) == 400
    assert status_of(lambda: client.get_all_style_rules(page=-1)) == 400


@pytest.mark.usefixtures("clean")
def test_another_keys_rule_is_not_found(
    client: deepl.DeepLClient, other: deepl.DeepLClient
) -> None:
    mine = client.create_style_rule("Mine", "en", custom_instructions=[TONE])
    tone = mine.custom_instructions[0].id
    assert other.get_all_style_rules() == []
    assert other.get_all_style_rules(detailed=True, page_size=25) == []
    for call in (
        lambda: other.get_style_rule(mine),
        lambda: other.update_style_rule_name(mine, "Theirs"),
        lambda: other.update_style_rule_configured_rules(mine, {}),
        lambda: other.create_style_rule_custom_instruction(mine, "x", "y"),
        lambda: other.get_style_rule_custom_instruction(mine, tone),  # type: ignore[arg-type]
        lambda: other.update_style_rule_custom_instruction(mine, tone, "x", "y"),  # type: ignore[arg-type]
        lambda: other.delete_style_rule_custom_instruction(mine, tone),  # type: ignore[arg-type]
        lambda: other.delete_style_rule(mine),
    ):
        assert status_of(call) == 404
    still = client.get_style_rule(mine)
    assert (still.name, still.version, len(still.custom_instructions)) == ("Mine", 1, 1)


@pytest.mark.usefixtures("clean")
def test_bad_input_is_a_400_the_client_raises(client: deepl.DeepLClient) -> None:
    too_long = {"label": "Long", "prompt": "x" * 301}
    for call in (
        lambda: client.create_style_rule("Bad", "xx"),
        lambda: client.create_style_rule("Bad", "en", custom_instructions=[too_long]),
        lambda: client.create_style_rule("Bad", "en", custom_instructions=[too_long] * 201),
        lambda: client.create_style_rule("Bad", "en", configured_rules={"punctuation": "use"}),
        lambda: client.create_style_rule("x" * 101, "en"),
        lambda: client.get_style_rule("not-a-style-id"),
    ):
        with pytest.raises(deepl.DeepLException, match="Bad request, message: ") as err:
            call()
        assert err.value.http_status_code == 400
    assert client.get_all_style_rules() == []  # nothing was stored
    rule = client.create_style_rule("Good", "en")
    assert (
        status_of(lambda: client.create_style_rule_custom_instruction(rule, "L", "p" * 301)) == 400
    )
    assert client.get_style_rule(rule).version == 1  # a refused change changes nothing
