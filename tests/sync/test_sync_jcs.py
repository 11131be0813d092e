"""The fast canonical-form check agrees with rfc8785 on every input (the bundle format depends on it)."""

from __future__ import annotations

import json

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from dynadesk.sync.format.canonical import loads_checked

scalars = (st.none() | st.booleans() | st.integers(-(2 ** 60), 2 ** 60)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
                      max_leaves=25)


def truth(raw: bytes) -> bool:
    try:
        return rfc8785.dumps(json.loads(raw)) == raw
    except Exception:  # noqa: BLE001
        return False


@settings(max_examples=200, deadline=None)
@given(values)
def test_canonical_bytes_are_recognised(value):
    try:
        raw = rfc8785.dumps(value)
    except Exception:  # noqa: BLE001 - values JCS cannot express
        return
    assert loads_checked(raw)[1] is truth(raw)  # True except rfc8785's own round-trip gaps (2**53 as a float)


@settings(max_examples=200, deadline=None)
@given(values, st.sampled_from(["python-sorted", "python-pretty", "ascii"]))
def test_other_encodings_are_judged_like_rfc8785(value, style):
    kw = {"python-sorted": dict(sort_keys=True, separators=(",", ":"), ensure_ascii=False),
          "python-pretty": dict(indent=1, ensure_ascii=False),
          "ascii": dict(sort_keys=True, separators=(",", ":"))}[style]
    try:
        raw = json.dumps(value, **kw).encode("utf-8")
    except UnicodeEncodeError:
        return
    assert loads_checked(raw)[1] == truth(raw)


def test_known_differences():
    for raw, expected in ((b'{"a":70}', True), (b'{"a":70.0}', False), (b'{"a":1e-7}', True),
                          (b'{"a":1e-07}', False), (b'{"b":1,"a":2}', False), (b'{"a":"\\u001F"}', False),
                          (b'{"a":-0}', False), (b'{"a":1E+21}', False),
                          ('{"\ue000":1,"\U0001f600":2}'.encode(), False),
                          ('{"\U0001f600":2,"\ue000":1}'.encode(), True), (b'{"a":9007199254740993}', False)):
        assert loads_checked(raw)[1] is expected, raw
        assert truth(raw) is expected, raw
