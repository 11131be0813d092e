"""Submitter keys: file mode, passphrase, fingerprint, refusal of unsafe or wrong keys."""

from __future__ import annotations

import hashlib
import stat

import pytest
from click.testing import CliRunner

from dynadesk.cli import cli
from dynadesk.errors import KeyFileError
from dynadesk.sync.format.keys import (
    PRIVATE_NAME,
    PUBLIC_NAME,
    generate_key,
    key_info,
    load_private_key,
    load_public_pem,
    public_raw,
)


def test_generate_writes_0600_private_key_and_matching_fingerprint(tmp_path):
    info = generate_key(tmp_path / "keys")
    priv = tmp_path / "keys" / PRIVATE_NAME
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    key = load_private_key(priv)
    raw = public_raw(key)
    assert info.fingerprint == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert public_raw(load_public_pem((tmp_path / "keys" / PUBLIC_NAME).read_bytes())) == raw
    assert key_info(tmp_path / "keys") == info


def test_existing_key_is_not_overwritten_without_force(tmp_path):
    first = generate_key(tmp_path)
    with pytest.raises(KeyFileError, match="already exists"):
        generate_key(tmp_path)
    assert key_info(tmp_path).fingerprint == first.fingerprint
    assert generate_key(tmp_path, force=True).fingerprint != first.fingerprint


def test_passphrase_protects_the_private_key(tmp_path):
    info = generate_key(tmp_path, passphrase="correct horse")
    assert info.encrypted and key_info(tmp_path).encrypted
    assert b"ENCRYPTED" in (tmp_path / PRIVATE_NAME).read_bytes()
    assert public_raw(load_private_key(tmp_path / PRIVATE_NAME, "correct horse")).hex() == info.public_key_hex
    with pytest.raises(KeyFileError, match="wrong passphrase"):
        load_private_key(tmp_path / PRIVATE_NAME, "wrong")
    with pytest.raises(KeyFileError, match="is encrypted"):
        load_private_key(tmp_path / PRIVATE_NAME)


def test_world_readable_private_key_is_refused(tmp_path):
    generate_key(tmp_path)
    (tmp_path / PRIVATE_NAME).chmod(0o644)
    with pytest.raises(KeyFileError, match="readable by other users"):
        load_private_key(tmp_path / PRIVATE_NAME)


def test_missing_key_names_the_fix(tmp_path):
    with pytest.raises(KeyFileError, match="dynadesk keys init"):
        key_info(tmp_path)


def test_cli_keys_init_show_export(home, tmp_path, monkeypatch):
    runner = CliRunner()
    monkeypatch.setenv("DYNADESK_KEY_PASSPHRASE", "s3cret")
    res = runner.invoke(cli, ["keys", "init", "--passphrase", "--json"])
    assert res.exit_code == 0, res.output
    shown = runner.invoke(cli, ["keys", "show", "--json"])
    assert '"encrypted": true' in shown.output
    out = tmp_path / "me.pub"
    assert runner.invoke(cli, ["keys", "export", "-o", str(out)]).exit_code == 0
    raw = public_raw(load_public_pem(out.read_bytes()))
    assert "sha256:" + hashlib.sha256(raw).hexdigest() in shown.output
    assert stat.S_IMODE((home / "keys" / PRIVATE_NAME).stat().st_mode) == 0o600
