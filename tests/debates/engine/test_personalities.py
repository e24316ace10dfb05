"""Personalities and prompt variants as SPEC 4 lists them."""

import pytest

from debates.engine.personalities import (
    DEFAULT_VARIANT,
    PERSONALITIES,
    VARIANTS,
    get_personality,
    get_variant,
)


def test_the_five_personalities_in_order_with_emoji_and_colour():
    # given / when
    table = [(p.id, p.name, p.emoji, p.color) for p in PERSONALITIES.values()]
    # then
    assert table == [
        ("bull", "Bull", "🐂", "#22C55E"),
        ("bear", "Bear", "🐻", "#EF4444"),
        ("analyst", "Analyst", "📊", "#3B82F6"),
        ("contrarian", "Contrarian", "🔄", "#F59E0B"),
        ("risk_manager", "Risk Manager", "🛡️", "#8B5CF6"),
    ]


@pytest.mark.parametrize("personality", PERSONALITIES.values(), ids=list(PERSONALITIES))
def test_each_personality_has_a_short_description_and_a_role(personality):
    assert 0 < len(personality.description) <= 100
    assert personality.role.startswith(f"You are the {personality.name}.")


def test_public_representation_leaves_out_the_prompt_role():
    assert get_personality("bear").to_dict() == {
        "id": "bear",
        "name": "Bear",
        "emoji": "🐻",
        "color": "#EF4444",
        "description": "Sceptic hunting for risks and shorts: resistance and weakening momentum.",
    }


def test_variants_are_the_four_of_the_spec_with_balanced_by_default():
    assert list(VARIANTS) == ["balanced", "aggressive", "conservative", "scalping"]
    assert DEFAULT_VARIANT == "balanced"
    assert all(0 < len(text) <= 400 for text in VARIANTS.values())


@pytest.mark.parametrize(
    ("lookup", "name"),
    [(get_personality, "shark"), (get_variant, "yolo")],
)
def test_unknown_ids_are_refused(lookup, name):
    with pytest.raises(KeyError, match=name):
        lookup(name)


def test_the_tables_cannot_be_changed_at_run_time():
    with pytest.raises(TypeError):
        PERSONALITIES["shark"] = PERSONALITIES["bull"]  # type: ignore[index]
