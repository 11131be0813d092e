"""The one upload path for bundles and attestations, cheapest checks first.

1. size and the envelope's fixed frame (:func:`split_envelope`: no payload parsing);
2. the carried key: registered, not revoked; its rate limit and stored-bytes quota looked at, nothing spent;
3. the Ed25519 signature over the payload bytes (once: :func:`verified_signer` already checked a small body's),
   then the costly part: JSON, canonical form, schema, size bounds; in the upload pool's worker processes
   (:mod:`dynadesk.sync.server.pool`) for a large body or under a flood, else here (cheaper than the pool);
4. the key's rate limit charged (only now: nobody can spend another submitter's allowance);
5. the cheap rest in the serving process: key binding, time, task, name, metric values, board datasets.

So a body that is not signed by a registered key costs a few regular-expression steps and one
dictionary lookup, however large or non-canonical it is, and a large signed one's costly checks never hold
the serving process's GIL. Each refusal is a specific :class:`~dynadesk.errors.BundleError`;
:mod:`dynadesk.sync.server.errors` maps it to HTTP.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from dynadesk.errors import (
    AttestationTimeError,
    DynaDeskError,
    FingerprintMismatch,
    FutureTimestampError,
    NotAuditorError,
    NotOnBoardError,
    OwnOrganisationError,
    QuotaExceededError,
    RevokedKeyError,
    SelfAttestationError,
    UnknownKeyError,
    VerdictMismatchError,
)
from dynadesk.sync.format import attestation as _att
from dynadesk.sync.format.envelope import FORMAT, Envelope, split_envelope
from dynadesk.sync.format.timestamps import epoch_us, parse_utc
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.rules.board import board_metrics
from dynadesk.sync.server import key_changes as _keys
from dynadesk.sync.server.db import CheckedAttestation, CheckedBundle, KeyRow, ServerDB, UploadConfig
from dynadesk.sync.server.limits import Limiter
from dynadesk.sync.server.names import check_model_name
from dynadesk.sync.server.pool import (
    INLINE_MAX_BYTES,
    MAX_ENVIRONMENT_BYTES,
    MAX_SETTINGS_BYTES,
    UploadPool,
    check_document,
)
from dynadesk.sync.server.task_registry import check_task_digest
from dynadesk.sync.server.values import MetricRule, check_evidence, check_metrics
from dynadesk.tasks import Task

__all__ = ["MAX_ENVIRONMENT_BYTES", "MAX_SETTINGS_BYTES", "UploadChecks", "check_upload", "ingest",
           "ingest_attestation"]


@dataclass
class UploadChecks:
    """What uploads are checked against besides the database: tasks, their metric rules, the key rate limit
    and the clock's slack; ``pool`` runs the costly checks (by default in the calling thread)."""

    tasks: Mapping[str, Task]
    rules: Mapping[str, dict[str, MetricRule]]
    key_limiter: Limiter
    max_skew: timedelta = timedelta(minutes=5)
    key_quota_bytes: int = 256 * 1024 * 1024  # stored bundle bytes per key (--key-quota)
    pool: UploadPool = field(default_factory=lambda: UploadPool(0))


QUOTA_RETRY_S = 3600


def _registered_key(config: UploadConfig, env: Envelope, what: str) -> KeyRow:
    fp = env.key_fingerprint
    key = config.keys.get(fp)
    if key is None:
        raise UnknownKeyError(f"{what} is signed by key {fp}, which this server has not registered"
                              " (ask the administrator: dynadesk-server keys add)")
    if key.revoked_at:
        raise RevokedKeyError(f"{what} is signed by key {fp}, revoked at {key.revoked_at}"
                              + (f": {key.revoke_reason}" if key.revoke_reason else ""))
    return key


def _signed_by_registered_key(db: ServerDB, checks: UploadChecks, raw: bytes, fmt: str,
                              what: str) -> tuple[KeyRow, dict[str, Any], UploadConfig]:
    """Steps 1-4 of the module docstring: the key, the facts the pool read from the document and the keys and
    datasets it was checked against (read once per upload: on PostgreSQL each read is a round trip)."""
    env = split_envelope(raw, what, fmt)
    config, used = db.upload_state(env.key_fingerprint)
    key = _registered_key(config, env, what)
    checks.key_limiter.check(key.fingerprint)
    if fmt == FORMAT:
        if used + len(raw) > checks.key_quota_bytes:
            raise QuotaExceededError(f"{what}: key {key.fingerprint} has stored {used} bytes of bundles; with this"
                                     f" {len(raw)}-byte one it would pass its quota of {checks.key_quota_bytes}"
                                     " bytes (ask the administrator)", QUOTA_RETRY_S)
    checked = _SIGNED.take(raw)  # verified_signer checked this very object's signature moments ago
    if checks.pool.inline(len(raw)):  # a small body, no flood: here costs less CPU than the pool's round trip
        outcome = check_document(raw, fmt, what, checked)
    else:
        outcome = checks.pool.run(check_document, raw, fmt, what)
    if outcome.verified:
        checks.key_limiter.take(key.fingerprint)
    if outcome.error is not None:
        raise outcome.error
    assert outcome.facts is not None  # a verified document without a refusal has its facts
    return key, outcome.facts, config


class _RecentlySigned:
    """Bodies whose signature :func:`verified_signer` verified, held (the objects themselves, so an id is never
    reused while held) until their upload's own check takes them: one Ed25519 check per small upload, not two.
    Bounded: at most ``size`` bodies of at most :data:`INLINE_MAX_BYTES` each, the oldest dropped first."""

    def __init__(self, size: int = 64):
        self.size = size
        self._held: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, raw: bytes) -> None:
        if len(raw) > INLINE_MAX_BYTES:  # checked in the pool anyway, in another process
            return
        with self._lock:
            self._held[id(raw)] = raw
            while len(self._held) > self.size:
                self._held.popitem(last=False)

    def take(self, raw: bytes) -> bool:
        """Whether this very object was verified here (and forget it)."""
        with self._lock:
            return self._held.pop(id(raw), None) is raw


_SIGNED = _RecentlySigned()


def verified_signer(db: ServerDB, raw: bytes, fmt: str = FORMAT) -> KeyRow | None:
    """The registered, unrevoked key whose valid signature ``raw`` carries, else None (an anonymous request).

    Steps 1-3 only (a regular-expression frame, a key lookup, one Ed25519 check), never raising: the app
    charges a request with no such key to its address's bucket and leaves a signed one to its key's
    (:mod:`dynadesk.sync.server.limits`), so anonymous traffic cannot spend a registered key's uploads. The keys
    are the process's cached copy, not re-read (on PostgreSQL a round trip per upload): the upload's own check
    (:func:`check_upload`) re-reads them, so a key revoked in another process is refused at once, and at most
    that one request was charged to the revoked key's bucket rather than its address's."""
    try:
        env = split_envelope(raw, "upload", fmt)
        key = _registered_key(db.upload_config(revalidate=False), env, "upload")
        env.verify("upload")
    except DynaDeskError:
        return None
    _SIGNED.add(raw)
    return key


def _check_datasets(payload: dict[str, Any], task: str, config: UploadConfig) -> dict[str, str]:
    accepted = config.datasets.get(task, {})
    digests = {}
    for i, d in enumerate(payload["datasets"]):
        known = accepted.get((task, d["name"]))
        if known is None:
            raise NotOnBoardError(f"payload.datasets[{i}]: dataset '{d['name']}' is not accepted on the"
                                  f" '{task}' board (dynadesk-server datasets add)")
        if known["digest"] != d["digest"]:
            old = config.superseded.get((task, d["name"], d["digest"]))
            was = (f"version {old['version']} of it, superseded by version {known['version']}" if old else
                   "a version this board never accepted")
            raise NotOnBoardError(f"payload.datasets[{i}]: dataset '{d['name']}' has digest {d['digest']} ({was}),"
                                  f" but the board accepts {known['digest']} (a different version of the data):"
                                  " evaluate on the current data")
        digests[d["name"]] = d["digest"]
    return digests


def check_upload(db: ServerDB, checks: UploadChecks, raw: bytes, now: datetime) -> CheckedBundle:
    """Everything but storing; raises the specific reason a bundle is refused."""
    what = "uploaded bundle"
    key, b, config = _signed_by_registered_key(db, checks, raw, FORMAT, what)
    if b["key_fingerprint"] != key.fingerprint:
        raise FingerprintMismatch(f"{what}: signed by key {key.fingerprint}, but payload.submitter.key_fingerprint"
                                  f" says {b['key_fingerprint']}")
    if parse_utc(b["created_at"], "payload.created_at") > now + checks.max_skew:
        raise FutureTimestampError(f"payload.created_at {b['created_at']} lies in the future"
                                   f" (server time {now.isoformat(timespec='seconds')})")
    task = checks.tasks.get(b["task"])
    if task is None:
        raise NotOnBoardError(f"payload.task: task '{b['task']}' is not on this board"
                              f" (known: {', '.join(sorted(checks.tasks))})")
    check_task_digest(b["task_digest"], task)
    model_name = str(b["model"]["name"])
    check_model_name(model_name)
    check_metrics(b["metrics"], checks.rules[task.name], task.name)
    check_evidence(b["metrics"], b["observed"], b["intervals"], task.metric)
    digests = _check_datasets(b, task.name, config)
    return CheckedBundle(b["id"], bytes(raw), b["sha256"], task.name, model_name, b["model"]["digest"],
                         key.fingerprint, b["created_at"], epoch_us(b["created_at"], "payload.created_at"),
                         digests, board_metrics(b["metrics"]), b["results_key"], b["stats"],
                         b["claim_key"], b["predictions_digest"])


def ingest(db: ServerDB, checks: UploadChecks, raw: bytes, now: datetime) -> dict[str, Any]:
    """Accept one bundle or raise the specific reason it is refused."""
    return db.accept(check_upload(db, checks, raw, now), entry_hash)


def ingest_attestation(db: ServerDB, checks: UploadChecks, raw: bytes, now: datetime) -> dict[str, Any]:
    """Accept one audit attestation: from an auditor's key, about another submitter's accepted bundle."""
    what = "uploaded attestation"
    key, att, config = _signed_by_registered_key(db, checks, raw, _att.FORMAT, what)
    if key.role != "auditor":
        raise NotAuditorError(f"{what}: key {key.fingerprint} ({key.name}) is not registered as an auditor"
                              " (dynadesk-server keys add --role auditor)")
    if att["problem"]:
        raise VerdictMismatchError(f"{what}: {att['problem']}")
    created_us = epoch_us(att["created_at"], "attestation payload.created_at")
    if parse_utc(att["created_at"], "attestation payload.created_at") > now + checks.max_skew:
        raise FutureTimestampError(f"attestation payload.created_at {att['created_at']} lies in the future")
    bundle = db.bundle_facts(att["bundle_id"])
    if created_us <= bundle.created_us:
        raise AttestationTimeError(f"{what}: payload.created_at {att['created_at']} is not later than the"
                                   f" attested bundle's created_at {bundle.created_at}: nobody can audit a bundle"
                                   " before it exists")
    _refuse_own_results(config, key, bundle.key_fingerprint, att["bundle_id"], what)
    _refuse_matching_names(db, config, key, bundle.key_fingerprint, att["bundle_id"], what)
    return db.accept_attestation(CheckedAttestation(att["id"], bytes(raw), att["sha256"], att["bundle_id"],
                                                    key.fingerprint, att["verdict"], att["summary"],
                                                    att["created_at"]), entry_hash)


def _refuse_own_results(config: UploadConfig, auditor: KeyRow, submitter_fp: str, bundle_id: str, what: str) -> None:
    """An auditor key never attests a bundle of its own key or of a key of its own organisation."""
    if submitter_fp == auditor.fingerprint:
        raise SelfAttestationError(f"{what}: key {auditor.fingerprint} signed bundle {bundle_id} itself;"
                                   " an auditor cannot attest their own bundle")
    submitter = config.keys.get(submitter_fp)
    if submitter is not None and submitter.org == auditor.org:
        raise OwnOrganisationError(f"{what}: auditor key {auditor.fingerprint} and the key that signed bundle"
                                   f" {bundle_id} both belong to organisation {auditor.organisation!r}; an auditor"
                                   " cannot attest its own organisation's results")


def _refuse_matching_names(db: ServerDB, config: UploadConfig, auditor: KeyRow, submitter_fp: str, bundle_id: str,
                           what: str) -> None:
    """An auditor key with no organisation never attests a key whose name or organisation matches its name (a
    lab's second key), unless the operator gave their word for that pair (key_changes.py)."""
    submitter = config.keys.get(submitter_fp)
    if submitter is None or not _keys.needs_operator_word(auditor, submitter) \
            or _keys.attest_allowed(db, auditor.fingerprint, submitter_fp):
        return
    raise OwnOrganisationError(
        f"{what}: auditor key {auditor.fingerprint} ({auditor.name!r}) has no organisation and its name matches"
        f" the key that signed bundle {bundle_id} ({submitter.name!r}"
        + (f", organisation {submitter.organisation!r}" if submitter.organisation else "") + "); the operator must"
        f" put it in its organisation (dynadesk-server keys set-org {auditor.fingerprint} ORG) or give their word"
        f" (dynadesk-server keys allow-attest {auditor.fingerprint} {submitter_fp})")
