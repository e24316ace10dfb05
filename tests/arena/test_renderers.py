"""Every API answer is written by orjson exactly as DRF's own JSON renderer writes it."""

from __future__ import annotations

import datetime
import json
import uuid
from decimal import Decimal

from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer

from arena.renderers import JsonRenderer

PAYLOAD = {
    "name": "débat ₿ 🐂",
    "lazy": gettext_lazy("Not found."),
    "price": Decimal("57970.90"),
    "at": datetime.datetime(2024, 8, 5, 12, 0, tzinfo=datetime.UTC),
    "day": datetime.date(2024, 8, 5),
    "took": datetime.timedelta(seconds=1.5),
    "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "ratios": [0.1, 12345.678, -0.0, 3, 1e300],
    "nested": {"empty": [], "none": None, "yes": True},
    "by_id": {7: "seven", 12: [1, 2]},
}


def test_the_renderer_writes_the_bytes_drf_would():
    assert JsonRenderer().render(PAYLOAD) == JSONRenderer().render(PAYLOAD)


def test_a_small_float_is_spelled_differently_with_the_same_value():
    ours, drfs = JsonRenderer().render([1e-7]), JSONRenderer().render([1e-7])
    assert (ours, drfs) == (b"[1e-7]", b"[1e-07]")
    assert json.loads(ours) == json.loads(drfs)


def test_an_indented_answer_is_drfs_own():
    indented = "application/json; indent=2"
    assert JsonRenderer().render(PAYLOAD, indented) == JSONRenderer().render(PAYLOAD, indented)
    assert JsonRenderer().render(None) == b""
