"""Malformed bundles as files (tests/assets/malformed/, written by ``support.make_assets``): each is a real bundle
with one thing broken, and parsing or verifying it fails with the error that names that thing.

Tampering a signed field needs a fresh signature per field: that stays in test_sync_bundle.py."""

from __future__ import annotations

import pytest
from support import ASSETS

from dynadesk.errors import BundleFormatError, FingerprintMismatch, SignatureError, UnsupportedVersionError
from dynadesk.sync.format.envelope import parse_bundle, verify_bundle

MALFORMED = ASSETS / "malformed"

# file -> (stage that refuses it, error, what the message names)
REFUSED = {
    "bundle_truncated.json": ("parse", BundleFormatError, "JSON"),
    "bundle_not_canonical.json": ("parse", BundleFormatError, "canonical"),
    "bundle_python_json.json": ("parse", BundleFormatError, "canonical"),
    "bundle_version_3.json": ("parse", UnsupportedVersionError, "version 3 is not supported"),
    "bundle_format_other.json": ("parse", BundleFormatError, "format"),
    "bundle_algorithm_rsa.json": ("parse", BundleFormatError, "algorithm"),
    "bundle_payload_no_task.json": ("parse", BundleFormatError, "missing field"),
    "bundle_payload_unknown_field.json": ("parse", BundleFormatError, "unknown field"),
    "bundle_payload_metric_text.json": ("parse", BundleFormatError, r"metrics\[0\]\.value"),
    "bundle_signature_flipped.json": ("verify", SignatureError, "signature"),
    "bundle_key_swapped.json": ("verify", FingerprintMismatch, "fingerprint"),
}


def test_the_valid_bundle_the_cases_are_made_from_parses_and_verifies():
    verify_bundle(parse_bundle((MALFORMED / "bundle_valid.json").read_bytes()))


def test_every_malformed_bundle_file_has_a_case():
    assert {p.name for p in MALFORMED.glob("bundle_*.json")} == set(REFUSED) | {"bundle_valid.json"}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_malformed_bundle_is_refused_naming_what_is_wrong(name):
    stage, error, match = REFUSED[name]
    raw = (MALFORMED / name).read_bytes()
    if stage == "parse":
        with pytest.raises(error, match=match):
            parse_bundle(raw)
    else:
        bundle = parse_bundle(raw)
        with pytest.raises(error, match=match):
            verify_bundle(bundle)
