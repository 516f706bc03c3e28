"""DeepL's configured style rules as plain English instructions for an LLM.

A style rule list (:mod:`mtfleet.core.style_rules`) enables predefined rules, as DeepL's API and
its clients send them: ``{category: {rule: option}}``, e.g.
``{"dates_and_times": {"time_format": "use_24_hour_clock"}}``. DeepL documents seven categories
(its Python client's ``ConfiguredRules``) and, in its OpenAPI schema, a few hundred rules and
options, most of them for one target language (German *Uhr*, Japanese kanji numbers...).

:func:`sentence` renders one enabled rule, in three tiers:

1. the options users pick most (times, dates, numbers, currencies, quotation marks, commas,
   tone...) have a sentence written for them here (:data:`SENTENCES`): ``time_format:
   use_24_hour_clock`` -> "Write times in the 24-hour clock.";
2. any other rule of a documented category is spelled out from its names, which DeepL words as
   instructions: ``time_format: use_12_hour_clock_with_korean_words_시_and_분`` -> "Time format:
   use 12-hour clock with korean words 시 and 분.";
3. a category DeepL does not document (a newer API, a typo) is passed on as a named rule:
   "Follow the style rule 'week numbering, first week: use iso weeks'." (the store accepts
   such rules so that a newer client keeps working; the model still sees what was asked).

The text of every tier is part of a rule's version (:attr:`StyleRule.version`), so a change to a
sentence here changes the phrase-cache key of the rules that use it.
"""

from __future__ import annotations

import re

#: DeepL's categories, in its client's order (``deepl.api_data.ConfiguredRules``).
CATEGORIES: tuple[str, ...] = (
    "dates_and_times",
    "formatting",
    "numbers",
    "punctuation",
    "spelling_and_grammar",
    "style_and_tone",
    "vocabulary",
)

#: (category, rule) -> option -> the instruction.
SENTENCES: dict[tuple[str, str], dict[str, str]] = {
    # --- dates and times ------------------------------------------------------------------
    ("dates_and_times", "calendar_era"): {
        "use_bc_and_ad": "Write calendar eras as BC and AD.",
        "use_bce_and_ce": "Write calendar eras as BCE and CE.",
    },
    ("dates_and_times", "centuries"): {
        "spell_out": "Spell out centuries in words (the twentieth century).",
        "use_arabic_numerals": "Write centuries in Arabic numerals (the 20th century).",
        "use_numerals": "Write centuries in numerals (the 20th century).",
        "use_roman_numerals": "Write centuries in Roman numerals (the XX century).",
    },
    ("dates_and_times", "date_format"): {
        "use_dd_slash_mm_slash_yyyy": "Write dates as DD/MM/YYYY.",
        "use_dd_slash_mm_slash_yyyy_with_leading_zeros_for_single_digit_days_and_months": (
            "Write dates as DD/MM/YYYY, with a leading zero for single-digit days and months."
        ),
        "use_mm_slash_dd_slash_yyyy_with_leading_zeros_for_single_digit_days_and_months": (
            "Write dates as MM/DD/YYYY, with a leading zero for single-digit days and months."
        ),
        "use_dd_period_mm_period_yyyy": "Write dates as DD.MM.YYYY.",
        "use_dd_period_mm_period_yyyy_with_leading_zeros_for_single_digit_days_and_months": (
            "Write dates as DD.MM.YYYY, with a leading zero for single-digit days and months."
        ),
        "use_yyyy_hyphen_mm_hyphen_dd_with_leading_zeros_for_single_digit_days_and_months": (
            "Write dates as YYYY-MM-DD, with a leading zero for single-digit days and months."
        ),
        "use_yyyy_hyphen_mm_hyphen_dd_with_leading_zero_for_single_digit_days_and_months": (
            "Write dates as YYYY-MM-DD, with a leading zero for single-digit days and months."
        ),
        "use_yyyy_slash_mm_slash_dd": "Write dates as YYYY/MM/DD.",
        "use_yyyy_period_mm_period_dd": "Write dates as YYYY.MM.DD.",
        "use_dd_space_spelled_out_month_space_yyyy": (
            "Write dates as the day, the month spelled out and the four-digit year (5 March 2024)."
        ),
        "use_dd_space_spelled_out_month_space_yyyy_without_leading_zeros_for_single_digit_days": (
            "Write dates as the day without a leading zero, the month spelled out and the "
            "four-digit year (5 March 2024)."
        ),
        "use_spelled_out_month_space_dd_comma_space_yyyy_without_leading_zeros_for_single_digit_days": (  # noqa: E501
            "Write dates as the month spelled out, the day without a leading zero, a comma and "
            "the four-digit year (March 5, 2024)."
        ),
    },
    ("dates_and_times", "dates_in_numerical_form"): {
        "use_dd_hyphen_mm_hyphen_yyyy": "Write numerical dates as DD-MM-YYYY.",
        "use_dd_period_mm_period_yyyy": "Write numerical dates as DD.MM.YYYY.",
        "use_dd_slash_mm_slash_yyyy": "Write numerical dates as DD/MM/YYYY.",
    },
    ("dates_and_times", "decades"): {
        "spell_out": "Spell out decades in words (the nineties).",
        "use_apostrophe_yy": "Write decades as an apostrophe and two digits (the '90s).",
        "use_yy_without_apostrophe": "Write decades as two digits without an apostrophe (the 90s).",
        "use_yyyy": "Write decades with four digits (the 1990s).",
    },
    ("dates_and_times", "hours_minutes_separator"): {
        "use_colon_without_spaces": (
            "Separate hours and minutes with a colon and no spaces (14:30)."
        ),
        "use_letter_h_without_spaces": (
            "Separate hours and minutes with the letter h and no spaces (14h30)."
        ),
        "use_letter_h_with_regular_space_on_either_side": (
            "Separate hours and minutes with the letter h and a space on either side (14 h 30)."
        ),
    },
    ("dates_and_times", "hours_minutes_seconds_separator"): {
        "use_colon": "Separate hours, minutes and seconds with colons (14:30:15).",
        "use_period": "Separate hours, minutes and seconds with periods (14.30.15).",
    },
    ("dates_and_times", "midnight_in_numerals"): {
        "use_00_00": "Write midnight as 00:00.",
        "use_24_00": "Write midnight as 24:00.",
    },
    ("dates_and_times", "single_digit_days_and_months"): {
        "do_not_use_leading_zero": "Write single-digit days and months without a leading zero.",
        "use_leading_zero": "Write single-digit days and months with a leading zero.",
    },
    ("dates_and_times", "single_digit_hours"): {
        "do_not_use_leading_zero": "Write single-digit hours without a leading zero (9:30).",
        "use_leading_zero": "Write single-digit hours with a leading zero (09:30).",
    },
    ("dates_and_times", "time_format"): {
        "use_24_hour_clock": "Write times in the 24-hour clock.",
        "use_24_hour_clock_with_colon_as_separator": (
            "Write times in the 24-hour clock, with a colon between hours and minutes (14:30)."
        ),
        "use_24_hour_clock_with_period_as_separator": (
            "Write times in the 24-hour clock, with a period between hours and minutes (14.30)."
        ),
        "spell_out_time_in_words": "Spell out times in words.",
        "use_12_hour_clock_and_uppercase_am_or_pm_without_periods": (
            "Write times in the 12-hour clock with AM or PM (2:30 PM)."
        ),
        "use_12_hour_clock_and_uppercase_am_or_pm_with_periods": (
            "Write times in the 12-hour clock with A.M. or P.M. (2:30 P.M.)."
        ),
        "use_12_hour_clock_and_lowercase_am_or_pm_without_periods": (
            "Write times in the 12-hour clock with am or pm (2:30 pm)."
        ),
        "use_12_hour_clock_and_lowercase_am_or_pm_with_periods": (
            "Write times in the 12-hour clock with a.m. or p.m. (2:30 p.m.)."
        ),
        "use_12_hour_clock_and_specify_morning_or_evening": (
            "Write times in the 12-hour clock and say whether it is morning or evening."
        ),
        "use_12_hour_clock_and_do_not_specify_morning_or_evening": (
            "Write times in the 12-hour clock without saying whether it is morning or evening."
        ),
        "use_hh_colon_mm_german_word_uhr_with_leading_zeros_for_single_digit_hours": (
            "Write times as HH:MM Uhr, with a leading zero for single-digit hours (09:30 Uhr)."
        ),
        "use_hh_colon_mm_german_word_uhr_without_leading_zeros_for_single_digit_hours": (
            "Write times as H:MM Uhr, without a leading zero for single-digit hours (9:30 Uhr)."
        ),
        "use_hh_period_mm_german_word_uhr_with_leading_zeros_for_single_digit_hours": (
            "Write times as HH.MM Uhr, with a leading zero for single-digit hours (09.30 Uhr)."
        ),
        "use_hh_period_mm_german_word_uhr_without_leading_zeros_for_single_digit_hours": (
            "Write times as H.MM Uhr, without a leading zero for single-digit hours (9.30 Uhr)."
        ),
    },
    ("dates_and_times", "writing_dates"): {
        "use_numerals": "Write dates in numerals.",
        "use_dd_space_spelled_out_month_space_yyyy": (
            "Write dates as the day, the month spelled out and the four-digit year (5 March 2024)."
        ),
    },
    ("dates_and_times", "years"): {
        "use_yyyy": "Write years with four digits (2024).",
        "use_apostrophe_yy": "Write years as an apostrophe and two digits ('24).",
    },
    # --- formatting -----------------------------------------------------------------------
    ("formatting", "phone_number_country_code_format"): {
        "use_plus_sign_before_country_code": (
            "Write a phone number's country code with a plus sign (+49)."
        ),
        "use_00_before_country_code": "Write a phone number's country code with 00 (0049).",
    },
    ("formatting", "phone_number_format"): {
        "keep_original_format": "Keep phone numbers in their original format.",
        "do_not_use_spaces": "Write phone numbers without spaces.",
    },
    ("formatting", "email_address_format"): {
        "use_standard_format": "Write email addresses in their standard format (name@example.com).",
    },
    # --- numbers --------------------------------------------------------------------------
    ("numbers", "decimal_separator"): {
        "use_period_as_decimal_separator": "Use a period as the decimal separator (3.5).",
        "use_comma_as_decimal_separator": "Use a comma as the decimal separator (3,5).",
        "use_period_and_do_not_use_thousands_separator": (
            "Use a period as the decimal separator and no thousands separator (10000.5)."
        ),
        "use_comma_and_do_not_use_thousands_separator": (
            "Use a comma as the decimal separator and no thousands separator (10000,5)."
        ),
    },
    ("numbers", "thousands_separator"): {
        "use_comma": "Use a comma as the thousands separator (10,000).",
        "use_period": "Use a period as the thousands separator (10.000).",
        "use_period_as_thousands_separator": "Use a period as the thousands separator (10.000).",
        "use_space": "Use a space as the thousands separator (10 000).",
        "use_space_as_thousands_separator": "Use a space as the thousands separator (10 000).",
        "use_straight_apostrophe_as_thousands_separator": (
            "Use a straight apostrophe as the thousands separator (10'000)."
        ),
        "do_not_use": "Do not use a thousands separator (10000).",
        "do_not_use_thousands_separator": "Do not use a thousands separator (10000).",
    },
    ("numbers", "currency_format"): {
        "use_currency_symbol_followed_by_amount_without_space": (
            "Write the currency symbol before the amount, without a space ($100)."
        ),
        "use_currency_symbol_followed_by_space_then_amount": (
            "Write the currency symbol, a space, then the amount ($ 100)."
        ),
        "use_amount_followed_by_space_then_currency_symbol": (
            "Write the amount, a space, then the currency symbol (100 €)."
        ),
        "use_amount_followed_by_currency_symbol_without_space": (
            "Write the amount followed by the currency symbol, without a space (100€)."
        ),
        "use_iso_code": "Write currencies as ISO codes (USD, EUR).",
        "use_iso_code_followed_by_space_then_amount": (
            "Write the ISO currency code, a space, then the amount (USD 100)."
        ),
        "use_amount_followed_by_space_then_iso_code": (
            "Write the amount, a space, then the ISO currency code (100 USD)."
        ),
        "spell_out": "Spell out currency names (100 dollars).",
    },
    ("numbers", "units_of_measure_spacing"): {
        "use_space_between_numeral_and_unit_of_measure": (
            "Put a space between a number and its unit of measure (5 kg)."
        ),
        "do_not_use_space_between_numeral_and_unit_of_measure": (
            "Write a number and its unit of measure without a space (5kg)."
        ),
    },
    ("numbers", "percentage_format"): {
        "use_numerals_followed_by_percent_symbol": (
            "Write percentages as a number followed by the percent sign (50%)."
        ),
        "use_numerals_followed_by_space_then_percent_symbol": (
            "Write percentages as a number, a space, then the percent sign (50 %)."
        ),
        "use_numerals_followed_by_space_then_spell_out_percent": (
            "Write percentages as a number followed by the word percent (50 percent)."
        ),
        "use_numerals_followed_by_space_then_spell_out_per_cent": (
            "Write percentages as a number followed by the words per cent (50 per cent)."
        ),
    },
    ("numbers", "writing_numbers"): {
        "use_arabic_numerals": "Write numbers in Arabic numerals.",
    },
    ("numbers", "decimal_numbers_less_than_one"): {
        "always_use_0_before_decimal_separator": (
            "Always write a 0 before the decimal separator of numbers below one (0.5)."
        ),
    },
    # --- punctuation ----------------------------------------------------------------------
    ("punctuation", "apostrophe"): {
        "use_curly_apostrophes": "Use curly apostrophes (’).",
        "use_straight_apostrophes": "Use straight apostrophes (').",
    },
    ("punctuation", "quotation_mark"): {
        "use_curly_quotation_marks": "Use curly quotation marks (“ ”).",
        "use_double_curly_quotation_marks": "Use double curly quotation marks (“ ”).",
        "use_straight_quotation_marks": 'Use straight quotation marks (" ").',
        "use_double_straight_quotation_marks": 'Use double straight quotation marks (" ").',
        "use_guillemets": "Use guillemets (« »).",
    },
    ("punctuation", "serial_comma"): {
        "use": "Use the serial (Oxford) comma before the last item of a list.",
        "do_not_use": "Do not use the serial (Oxford) comma before the last item of a list.",
    },
    ("punctuation", "periods_in_academic_degrees"): {
        "use": "Write academic degrees with periods (Ph.D.).",
        "do_not_use": "Write academic degrees without periods (PhD).",
    },
    ("punctuation", "periods_in_direct_quotes"): {
        "use": "Put a period at the end of a direct quote.",
        "do_not_use": "Do not put a period at the end of a direct quote.",
    },
    ("punctuation", "comma_after_i_e_and_e_g"): {
        "use": "Put a comma after 'i.e.' and 'e.g.'.",
        "do_not_use": "Do not put a comma after 'i.e.' and 'e.g.'.",
    },
    ("punctuation", "comma_after_conjunctive_adverbs"): {
        "use": "Put a comma after conjunctive adverbs (however, therefore).",
        "do_not_use": "Do not put a comma after conjunctive adverbs (however, therefore).",
    },
    ("punctuation", "comma_after_short_introductory_phrase"): {
        "use": "Put a comma after a short introductory phrase.",
        "do_not_use": "Do not put a comma after a short introductory phrase.",
    },
    ("punctuation", "dash"): {
        "use_em_dash": "Use em dashes (—) as dashes.",
        "use_hyphen": "Use hyphens (-) as dashes.",
    },
    ("punctuation", "ellipsis"): {
        "use_ellipsis_character": "Write an ellipsis as the single character (…).",
        "use_three_periods": "Write an ellipsis as three periods (...).",
        "use_three_spaced_periods": "Write an ellipsis as three spaced periods (. . .).",
    },
    ("punctuation", "range_indicator"): {
        "use_en_dash_without_spaces": "Write ranges with an en dash and no spaces (5–10).",
        "use_en_dash_with_spaces": "Write ranges with an en dash and spaces (5 – 10).",
        "use_hyphen_without_spaces": "Write ranges with a hyphen and no spaces (5-10).",
        "use_hyphen_with_spaces": "Write ranges with a hyphen and spaces (5 - 10).",
        "use_english_word_to": "Write ranges with the word 'to' (5 to 10).",
        "use_german_word_bis": "Write ranges with the word 'bis' (5 bis 10).",
    },
    ("punctuation", "exclamation_marks"): {
        "do_not_use": "Do not use exclamation marks.",
    },
    ("punctuation", "acronyms"): {
        "do_not_use_periods": "Write acronyms without periods (NASA, not N.A.S.A.).",
    },
    ("punctuation", "slash"): {
        "do_not_use_spaces_before_and_after_slashes": "Do not put spaces around slashes (and/or).",
        "use_spaces_before_and_after_slashes": "Put a space before and after slashes (and / or).",
    },
    ("punctuation", "salutation"): {
        "use_comma_after_salutation": "Put a comma after the salutation (Dear Anna,).",
        "use_colon_after_salutation": "Put a colon after the salutation (Dear Anna:).",
        "use_exclamation_mark_after_salutation": (
            "Put an exclamation mark after the salutation (Dear Anna!)."
        ),
    },
    ("punctuation", "possessives_of_proper_names_ending_in_s_style"): {
        "add_apostrophe_only": (
            "Form the possessive of a proper name ending in s with an apostrophe only (James')."
        ),
        "add_apostrophe_s": (
            "Form the possessive of a proper name ending in s with an apostrophe and s (James's)."
        ),
    },
    # --- spelling and grammar -------------------------------------------------------------
    ("spelling_and_grammar", "contractions"): {
        "use_contractions": "Use contractions (don't, it's).",
        "do_not_use_contractions": "Do not use contractions (write do not, it is).",
        "use_contractions_but_avoid_negative_contractions": (
            "Use contractions, but not negative ones (write do not rather than don't)."
        ),
    },
    ("spelling_and_grammar", "abbreviation_usage"): {
        "use_abbreviations": "Use abbreviations.",
        "use_abbreviations_as_needed": "Use abbreviations where they are needed.",
        "do_not_use_abbreviations": "Do not use abbreviations.",
        "do_not_use_abbreviations_unless_necessary": "Do not use abbreviations unless necessary.",
    },
    ("spelling_and_grammar", "latin_abbreviations"): {
        "do_not_use_latin_abbreviations": (
            "Do not use Latin abbreviations such as e.g., i.e. or etc."
        ),
    },
    ("spelling_and_grammar", "passive_voice"): {
        "avoid_passive_voice_when_agent_is_known": (
            "Avoid the passive voice when it is known who does the action."
        ),
    },
    ("spelling_and_grammar", "complete_sentences"): {
        "always_write_complete_sentences": "Always write complete sentences.",
    },
    ("spelling_and_grammar", "conjunctions"): {
        "never_start_sentence_with_coordinating_conjunction": (
            "Never start a sentence with a coordinating conjunction (and, but, or)."
        ),
    },
    ("spelling_and_grammar", "eszett"): {
        "replace_eszett_with_ss": "Write ss instead of ß.",
    },
    ("spelling_and_grammar", "umlauts"): {
        "replace_umlauts_with_ae_oe_ue": "Write ae, oe and ue instead of ä, ö and ü.",
    },
    ("spelling_and_grammar", "compound_nouns"): {
        "write_as_one_word": "Write compound nouns as one word.",
        "write_with_hyphen": "Write compound nouns with a hyphen.",
    },
    ("spelling_and_grammar", "personal_titles"): {
        "abbreviate": "Abbreviate personal titles (Dr., Prof.).",
        "do_not_abbreviate": "Write personal titles in full (Doctor, Professor).",
    },
    # --- style and tone -------------------------------------------------------------------
    ("style_and_tone", "formality"): {
        "use_formal_tone": "Use a formal tone.",
        "use_casual_tone": "Use a casual tone.",
    },
    ("style_and_tone", "abbreviations"): {
        "use_abbreviations_and_symbols": "Use abbreviations and symbols.",
        "avoid_abbreviations_and_symbols_that_can_be_spelled_out_easily": (
            "Avoid abbreviations and symbols that can easily be spelled out."
        ),
    },
    ("style_and_tone", "short_vs_long_words"): {
        "use_short_words": "Prefer short words to long ones.",
    },
    ("style_and_tone", "complex_sentences"): {
        "avoid_unnecessarily_complex_sentences": "Avoid unnecessarily complex sentences.",
    },
    ("style_and_tone", "simple_words_and_sentences"): {
        "use_simple_words_and_sentences_avoid_hard_to_translate_words_and_figures_of_speech": (
            "Use simple words and sentences; avoid words and figures of speech that are hard to "
            "translate."
        ),
    },
    ("style_and_tone", "positive_vs_negative_language"): {
        "use_positive_language": "Use positive language.",
    },
    ("style_and_tone", "personal_vs_impersonal_style"): {
        "use_personal_style": "Use a personal style that addresses the reader directly.",
        "use_impersonal_style": "Use an impersonal style.",
    },
    ("style_and_tone", "instructions_style"): {
        "use_imperative": "Write instructions in the imperative (Click Save).",
        "use_indicative": "Write instructions in the indicative (You click Save).",
        "use_infinitive": "Write instructions in the infinitive.",
        "use_modal_verbs": "Write instructions with modal verbs (You should click Save).",
        "use_passive_voice": "Write instructions in the passive voice.",
    },
    ("style_and_tone", "addressing_the_reader"): {
        "use_formal_french_word_vous": "Address the reader formally, with vous.",
        "use_informal_french_word_tu": "Address the reader informally, with tu.",
        "use_formal_italian_word_lei": "Address the reader formally, with Lei.",
        "use_informal_italian_word_tu": "Address the reader informally, with tu.",
    },
    ("style_and_tone", "double_negatives"): {
        "do_not_use_double_negatives": "Do not use double negatives.",
        "use_double_negatives": "Double negatives may be used.",
    },
    ("style_and_tone", "binary_representation_of_gender"): {
        "replace_binary_representations_of_gender_with_gender_neutral_language": (
            "Replace binary representations of gender with gender-neutral language."
        ),
        "avoid_binary_representation_of_gender_when_gender_neutral_language_can_be_used": (
            "Avoid binary representations of gender where gender-neutral language can be used."
        ),
        "use_neutral_pronouns": "Use gender-neutral pronouns.",
    },
    ("style_and_tone", "idioms_colloquialisms_and_culture_specific_references"): {
        "do_not_use": "Do not use idioms, colloquialisms or culture-specific references.",
    },
    ("style_and_tone", "modal_verbs"): {
        "avoid_modal_verbs": "Avoid modal verbs.",
    },
    ("style_and_tone", "redundant_phrases"): {
        "do_not_use_redundant_phrases": "Do not use redundant phrases.",
        "avoid_relativizing_and_redundant_phrases": "Avoid relativizing and redundant phrases.",
    },
    ("style_and_tone", "country_names"): {
        "use_short_form": "Use the short form of country names (Germany).",
        "use_long_form": (
            "Use the long, official form of country names (the Federal Republic of Germany)."
        ),
    },
}

#: Rules whose name reads badly spelled out mechanically.
_TITLES: dict[str, str] = {
    "comma_after_i_e_and_e_g": "Comma after i.e. and e.g.",
}

_WORDS = re.compile(r"\s+")
_HOUR = re.compile(r"\b(12|24) hour\b")


def words(identifier: str) -> str:
    """A DeepL identifier as words: ``use_12_hour_clock`` -> ``use 12-hour clock``."""
    text = _WORDS.sub(" ", identifier.replace("_", " ")).strip()
    return _HOUR.sub(r"\1-hour", text)


def _title(rule: str) -> str:
    text = _TITLES.get(rule) or words(rule)
    return text[:1].upper() + text[1:]


def sentence(category: str, rule: str, option: str) -> str:
    """One enabled rule as an English instruction (see the module's three tiers)."""
    written = SENTENCES.get((category, rule), {}).get(option)
    if written is not None:
        return written
    if category in CATEGORIES:
        return f"{_title(rule)}: {words(option)}."
    return f"Follow the style rule '{words(category)}, {words(rule)}: {words(option)}'."
