"""The one test of a material difference (``unmask.propose.material``): numbers matched whole,
negations, names and content words one side never has, and no alarm on a paraphrase."""

from __future__ import annotations

from unmask.propose.material import conflict, differs, missing, terms


def test_a_number_is_matched_whole_at_word_boundaries():
    # the `2` of a `2-0` score is not the number 2 (a FactCC judgment once passed on it)
    assert "2" not in terms("England's 2-0 friendly win").numbers
    assert set(terms("England's 2-0 friendly win").numbers) == {"2-0"}
    found = missing("The team scored 2 goals.", "England's 2-0 friendly win over the team.")
    assert found is not None and found.kind == "number" and found.words == ("2",)
    assert missing("It has 1,300 staff.", "Its staff number 1300.") is None
    assert missing("It has fifty staff.", "It has 50 staff.") is None
    assert missing("Logs are kept for 90 days.", "Logs are kept for 900 days.").words == ("90",)


def test_a_negation_only_one_side_has_is_material():
    found = differs("Logs are kept for 90 days.", "Logs are not kept for 90 days.")
    assert found is not None and found.kind == "negation" and found.words == ("not",)
    assert missing("Logs aren't kept.", "Logs are kept.").kind == "negation"
    assert conflict("SSO works with Okta.", "SSO does not work with Okta.").kind == "negation"


def test_a_name_the_other_text_never_has_is_material():
    claim = "Logs are kept for 90 days on the Pro plan."
    found = differs(claim, "Logs are kept for 90 days on the Free plan.")
    assert found is not None and found.kind == "name" and found.words == ("Pro",)
    assert "a name the passage never has" in str(found)
    # a capitalised word that only opens a sentence is not a name; two in a row are
    assert "logs" not in terms("Logs are kept.").names
    assert set(terms("Amber Chia won.").names) == {"amber", "chia"}


def test_two_content_words_the_other_never_has_are_material_one_is_not():
    assert missing("The session was deeply unproductive.", "The session was unproductive.") is None
    found = missing("Exports include audit trails.", "Exports include invoices.")
    assert found is not None and found.kind == "words"
    assert set(found.words) == {"audit", "trails"}


def test_each_side_filling_the_same_slot_differently_is_a_conflict():
    found = conflict("retained for 7 days", "kept for 90 days")
    assert found is not None and found.both and set(found.words) == {"7", "90"}
    assert "give different numbers" in str(found)
    assert conflict("on the Free plan", "on the Pro plan").kind == "name"
    assert conflict("Logs are kept for 90 days.", "Logs are kept for 90 days on Pro.") is None


def test_a_paraphrase_where_nothing_material_differs_raises_no_alarm():
    pairs = [
        ("Logs are kept for 90 days on the Pro plan.",
         "On the Pro plan, application logs are retained for 90 days."),
        ("Webhooks retry failed deliveries five times.",
         "A failed webhook delivery is retried five times."),
        ("He died on December 20, 1998.", "Died: Dec. 20, 1998"),
        ("Two-factor authentication is required for admin accounts.",
         "Every admin account is required to use two-factor authentication."),
    ]  # fmt: skip
    for claim, passage in pairs:
        assert differs(claim, passage) is None, (claim, passage)


def test_a_number_only_the_passage_has_keeps_it_from_backing_the_claim():
    found = differs("Rate limits reset every hour.", "Rate limits reset every 24 hours.")
    assert found is not None and found.words == ("24",)
    assert "a number the claim never has" in str(found)


def test_a_reader_s_own_vocabulary_can_be_left_out():
    said = "The line states that the bridge opened."
    assert missing(said, "The bridge opened.") is not None  # `Sentence`, `states`
    ignore = frozenset({"line", "stat"})
    assert missing(said, "The bridge opened.", ignore=ignore) is None
