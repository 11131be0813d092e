"""One exception hierarchy for the whole core library.

Foreign errors (sqlite3, yaml, json, docker, requests, torch) are translated
into these where they enter, so callers (CLI, GUI, server) catch one family
and can show ``str(err)`` to a user as-is: every message names what is wrong
and where.
"""

from __future__ import annotations


class DynaDeskError(Exception):
    """Base of every error the library raises on purpose."""


class ConfigError(DynaDeskError):
    """A task file, manifest, spec or setting is malformed."""


class NotFoundError(DynaDeskError):
    """A named thing (task, dataset, model, run, bundle ...) does not exist."""


class AlreadyExistsError(DynaDeskError):
    """A name or content digest is already registered."""


class ValidationError(DynaDeskError):
    """Input data failed validation; ``problems`` lists every issue found."""

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems or [])
        if self.problems:
            shown = "\n".join(f"  - {p}" for p in self.problems[:50])
            more = len(self.problems) - 50
            if more > 0:
                shown += f"\n  ... and {more} more"
            message = f"{message}\n{shown}"
        super().__init__(message)


class StoreError(DynaDeskError):
    """The workspace database could not be opened or written."""


class DataRecipeError(DynaDeskError):
    """The bundled-data recipe failed (download, digest mismatch, bad archive)."""


class ModelError(DynaDeskError):
    """A model folder cannot be registered or loaded."""


class UnsafeModelError(ModelError):
    """A model holds pickle weights, which execute code when loaded on the host."""


class EvaluationError(DynaDeskError):
    """An evaluation run failed; ``verdict`` says how (oom, timeout, ...)."""

    def __init__(self, message: str, verdict: str = "error"):
        self.verdict = verdict
        super().__init__(message)


class Cancelled(DynaDeskError):
    """Long work stopped because its :class:`~dynadesk.cancel.CancelToken` was cancelled."""


class AnnotationError(DynaDeskError):
    """An annotation action is not allowed (own example, second vote, ...)."""


class BundleError(DynaDeskError):
    """A score bundle is malformed or does not verify."""


class SyncError(DynaDeskError):
    """Talking to the leaderboard server failed."""


# --- bundles, signing and sync -----------------------------------------------------------------

class KeyFileError(BundleError):
    """A signing key file is missing, unreadable, world-readable or needs another passphrase."""


class BundleFormatError(BundleError):
    """A bundle is not well-formed (bad JSON, missing/extra fields, wrong types, not canonical)."""


class UnsupportedVersionError(BundleFormatError):
    """A bundle declares a format version this program does not read."""


class SignatureError(BundleError):
    """A bundle's Ed25519 signature does not verify over its canonical bytes."""


class FingerprintMismatch(BundleError):
    """The public key carried in a bundle does not match the fingerprint it claims."""


class DigestMismatch(BundleError):
    """A file's digest (predictions, Merkle root) differs from the one recorded."""


class UnknownKeyError(BundleError):
    """A bundle is signed by a key the server has not registered."""


class RevokedKeyError(UnknownKeyError):
    """A bundle is signed by a key the server's administrator revoked."""


class ReplayError(BundleError):
    """A bundle with this id was already accepted."""


class FutureTimestampError(BundleError):
    """A bundle claims to have been created in the future."""


class NotOnBoardError(BundleError):
    """A bundle names a task or dataset (name/digest) the board does not accept."""


class MerkleProofError(BundleError):
    """A Merkle inclusion proof is malformed or does not lead to the stated root."""


class LogIntegrityError(BundleError):
    """The server's transparency log is broken: a hash link or the signed head does not match."""


class ServerUnavailable(SyncError):
    """The leaderboard server could not be reached (after retries); queued bundles stay queued."""


class ServerAnswerError(SyncError):
    """The server answered, but not as its protocol says: an unexpected status, a body that is not JSON,
    or a missing or mistyped field. The message names the URL (and the field)."""

    def __init__(self, message: str, status: int | None = None):
        self.status = status
        super().__init__(message)


class UploadRejected(SyncError):
    """The server refused a bundle; ``code`` and ``status`` carry its reason."""

    def __init__(self, message: str, code: str = "rejected", status: int = 400):
        self.code = code
        self.status = status
        super().__init__(message)


class ImageBuildError(DynaDeskError):
    """The offline evaluator image could not be built (debootstrap, pip, docker load)."""


# --- audit --------------------------------------------------------------------------------------

class AuditError(DynaDeskError):
    """An audit cannot be carried out (missing predictions file, no model folder, unusable runner)."""


class PredictionsUnavailable(AuditError):
    """The run's predictions file for a bundle is not in this workspace (or its bytes changed)."""


class NotReproducibleError(AuditError):
    """The determinism pre-flight found fields that did not reproduce; ``fields`` names each one."""

    def __init__(self, message: str, fields: list[str] | None = None):
        self.fields = list(fields or [])
        super().__init__(message)


# --- local integrity (issue 18) -------------------------------------------------------------------

class JSONDepthError(ValidationError):
    """A JSON document nests deeper than the entry point allows (it would exhaust the parser's stack)."""


class UntrustedKeyError(AnnotationError):
    """An annotation pack is signed by a key this workspace has not trusted ('dynadesk annotate trust')."""

# --- public board integrity (issue 17) -------------------------------------------------------------

class MetricValueError(BundleError):
    """A bundle's metric falls outside the task's metric registry (unknown name, wrong unit, out of range)."""


class ModelNameError(BundleError):
    """A bundle's model name could impersonate another row (control or invisible characters, mixed scripts,
    not NFC, a submitter qualifier)."""


class RateLimitedError(DynaDeskError):
    """Too many uploads from one address or key; ``retry_after`` is how many seconds to wait."""

    def __init__(self, message: str, retry_after: int = 1):
        self.retry_after = retry_after
        super().__init__(message)


class AttestationError(BundleError):
    """An audit attestation is refused: the signer is not an auditor, attests their own bundle, or names no bundle."""


class NotAuditorError(AttestationError):
    """The attestation's key is registered, but not with the auditor role."""


class SelfAttestationError(AttestationError):
    """An auditor tried to attest a bundle signed with their own key."""

# --- runs (typed requests, run folders, the Docker boundary) -------------------------------------

class RunStateError(EvaluationError):
    """A run's status change is not one of the allowed transitions (e.g. succeeded -> running)."""

    def __init__(self, message: str):
        super().__init__(message, verdict="error")


class RunFolderError(EvaluationError):
    """A run folder holds what the host must not touch (links, foreign files) or lacks its spec."""

    def __init__(self, message: str):
        super().__init__(message, verdict="error")


class DockerUnavailable(EvaluationError):
    """No Docker daemon answers, or it refused a request; the message says the fix."""

# --- the job queue (Celery + Redis across machines) ----------------------------------------------

class QueueError(DynaDeskError):
    """The job queue cannot be used: a bad broker URL, an unreachable or refusing broker, a missing job or blob."""


class BrokerUnavailable(QueueError):
    """The Redis broker does not answer or refuses the password; the message names the broker and the fix."""


class TransferError(QueueError):
    """A model file or dataset fetched by content digest is missing from the broker or does not match its digest."""


# --- attestations that follow from their fields (issue 32) -----------------------------------------

class VerdictMismatchError(AttestationError):
    """An attestation's verdict is not the one its per-field verdicts give (a "differs" field makes it "disputed")."""


class AttestationTimeError(AttestationError):
    """An attestation claims a time before the bundle it attests existed."""


class OwnOrganisationError(SelfAttestationError):
    """An auditor key attests a bundle signed by a key of its own organisation."""


class QuotaExceededError(RateLimitedError):
    """A key has stored as many bundle bytes as the server allows it (``--key-quota``)."""


class SnapshotError(BundleError):
    """A board snapshot is malformed, its server signature fails, or a row does not follow from the log's bundles."""


class HubAuthError(DynaDeskError):
    """A hub request without a valid session: not signed in, or the session expired or was revoked."""


class HubForbiddenError(DynaDeskError):
    """A hub request the signed-in person's role, or the request's CSRF token, does not allow."""


# --- server throughput (issue 39) -----------------------------------------------------------------

class ServerBusyError(RateLimitedError):
    """The server is checking as many uploads as it admits at once; ``retry_after`` says when to try again (503)."""


# --- hostile text (issue 45) -------------------------------------------------------------------------

class HiddenTextError(BundleFormatError):
    """A bundle's text holds a control or invisible character (NUL, U+202E): well-formed, but what a reader or
    PostgreSQL would get differs from what was signed; refused naming the field (422 ``invalid_text``)."""
