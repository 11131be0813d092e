"""Audits of signed score bundles: re-run a submission and give a field-by-field verdict.

Modules (import what you need; this package imports nothing heavy on its own):

- :mod:`dynadesk.audit.report` — verdicts, one :class:`Check` per field, the :class:`AuditReport`;
- :mod:`dynadesk.audit.tolerances` — the ``tolerances`` a bundle declares for measured metrics;
- :mod:`dynadesk.audit.inputs` — model folder, datasets and evaluator image against the bundle;
- :mod:`dynadesk.audit.transparency` — is the bundle in a server's transparency log;
- :mod:`dynadesk.audit.compare` — bundle fields against the results of a run;
- :mod:`dynadesk.audit.rerun` — run the evaluation again with the recorded settings and seeds;
- :mod:`dynadesk.audit.proofs` — Merkle inclusion proofs for single predictions;
- :mod:`dynadesk.audit.preflight` — the determinism pre-flight before a bundle is signed;
- :mod:`dynadesk.audit.audit` — :func:`audit_bundle`, which ties them together.
"""
