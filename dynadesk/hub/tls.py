"""TLS for the hub on a LAN: the lead's certificate, or a self-signed one made once and kept in the workspace.

On an office network sign-in codes and session cookies must not travel in clear, so ``--lan`` serves HTTPS only.
Without a certificate from the lead, the hub makes a self-signed one on first use (an ECDSA P-256 key, valid for
this machine's names and addresses for two years) and keeps it in ``<workspace>/hub/tls/`` (key file mode 0600),
so its fingerprint stays the same from one start to the next. Browsers warn about a self-signed certificate; the
hub prints its SHA-256 fingerprint, which the lead reads out to annotators to compare with what the browser shows.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dynadesk.errors import ValidationError

CERT_NAME = "hub-cert.pem"
KEY_NAME = "hub-key.pem"
VALID_DAYS = 730


@dataclass(frozen=True)
class HubTLS:
    """The certificate and key files the hub serves with, and the certificate's SHA-256 fingerprint."""

    cert: Path
    key: Path
    fingerprint: str
    self_signed: bool


def tls_dir(home: Path) -> Path:
    return Path(home) / "hub" / "tls"


def fingerprint_of(cert_file: Path) -> str:
    """``AB:CD:...``: the SHA-256 of the certificate's DER form, as browsers show it."""
    try:
        cert = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
    except (OSError, ValueError) as exc:
        raise ValidationError(f"{cert_file}: not a readable PEM certificate ({exc}); give the certificate file "
                              "with --tls-cert") from exc
    return cert.fingerprint(hashes.SHA256()).hex(":").upper()


def _names(addresses: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.DNSName(socket.gethostname())]
    for addr in ["127.0.0.1", *addresses]:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(addr)))
        except ValueError:
            continue
    return list(dict.fromkeys(names))


def make_self_signed(folder: Path, addresses: list[str]) -> HubTLS:
    """Write a new self-signed certificate and its key into ``folder`` (the key readable by its owner only)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"DynaDesk hub on {socket.gethostname()}")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(_names(addresses)), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    key_path, cert_path = folder / KEY_NAME, folder / CERT_NAME
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return HubTLS(cert_path, key_path, fingerprint_of(cert_path), True)


def hub_tls(home: Path, cert: Path | None, key: Path | None, addresses: list[str]) -> HubTLS:
    """The lead's certificate and key when given (both or neither), else the workspace's self-signed one, made on
    first use and reused while it is valid."""
    if (cert is None) != (key is None):
        raise ValidationError("give both --tls-cert and --tls-key (the certificate and its private key), or neither "
                              "for a self-signed certificate kept in the workspace")
    if cert is not None and key is not None:
        for path in (cert, key):
            if not Path(path).is_file():
                raise ValidationError(f"{path}: no such file")
        return HubTLS(Path(cert), Path(key), fingerprint_of(Path(cert)), False)
    folder = tls_dir(home)
    cert_path, key_path = folder / CERT_NAME, folder / KEY_NAME
    if cert_path.is_file() and key_path.is_file():
        existing = x509.load_pem_x509_certificate(cert_path.read_bytes())
        if existing.not_valid_after_utc > dt.datetime.now(dt.UTC) + dt.timedelta(days=1):
            return HubTLS(cert_path, key_path, fingerprint_of(cert_path), True)
    return make_self_signed(folder, addresses)
