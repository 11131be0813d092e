"""The annotation tables' migrations (``Migrations("dynadesk.annotation")``): annotators, rounds, contexts,
examples, validations, trusted pack keys. Never change an applied one; add the next ``m00N_``."""

from __future__ import annotations

from sqlite_utils import Database, Migrations

migrations = Migrations("dynadesk.annotation")


@migrations()
def m001_annotation(db: Database) -> None:
    db.execute("""
        CREATE TABLE annotators (
            name TEXT PRIMARY KEY,
            role TEXT NOT NULL CHECK (role IN ('annotator', 'owner')),
            created_at TEXT NOT NULL
        )""")
    db.execute("""
        CREATE TABLE rounds (
            id INTEGER PRIMARY KEY,
            task TEXT NOT NULL,
            number INTEGER NOT NULL CHECK (number >= 1),
            status TEXT NOT NULL CHECK (status IN ('open', 'closed')),
            created_by TEXT,
            created_at TEXT NOT NULL,
            closed_at TEXT,
            UNIQUE (task, number)
        )""")
    db.execute("CREATE UNIQUE INDEX rounds_one_open ON rounds(task) WHERE status = 'open'")
    db.execute("""
        CREATE TABLE round_models (
            round_id INTEGER NOT NULL REFERENCES rounds(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            model_name TEXT NOT NULL,
            model_digest TEXT NOT NULL,
            PRIMARY KEY (round_id, model_name)
        )""")
    db.execute("""
        CREATE TABLE contexts (
            round_id INTEGER NOT NULL REFERENCES rounds(id) ON DELETE CASCADE,
            context_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (round_id, context_id)
        )""")
    db.execute("""
        CREATE TABLE annotated_examples (
            seq INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            round_id INTEGER NOT NULL REFERENCES rounds(id),
            task TEXT NOT NULL,
            annotator TEXT NOT NULL REFERENCES annotators(name),
            context_id TEXT,
            inputs TEXT NOT NULL,
            target TEXT NOT NULL,
            model_name TEXT NOT NULL,
            model_digest TEXT NOT NULL,
            model_output TEXT NOT NULL,
            fooled INTEGER NOT NULL CHECK (fooled IN (0, 1)),
            explanation TEXT NOT NULL DEFAULT '',
            time_ms INTEGER NOT NULL CHECK (time_ms >= 0),
            hmac TEXT NOT NULL,
            origin TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""")
    db.execute("CREATE INDEX annotated_examples_round ON annotated_examples(round_id, annotator)")
    db.execute("""
        CREATE TABLE validations (
            seq INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            example_uid TEXT NOT NULL REFERENCES annotated_examples(uid) ON DELETE CASCADE,
            annotator TEXT NOT NULL REFERENCES annotators(name),
            verdict TEXT NOT NULL CHECK (verdict IN ('correct', 'incorrect', 'flagged')),
            label TEXT,
            reason TEXT NOT NULL DEFAULT '',
            origin TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (example_uid, annotator)
        )""")
    # Defence in depth: the library checks this too, with a friendlier message.
    db.execute("""
        CREATE TRIGGER validations_no_self BEFORE INSERT ON validations
        WHEN NEW.annotator = (SELECT annotator FROM annotated_examples WHERE uid = NEW.example_uid)
        BEGIN SELECT RAISE(ABORT, 'an annotator cannot validate their own example'); END""")



@migrations()
def m002_trusted_pack_keys(db: Database) -> None:
    """Ed25519 keys whose signed annotation packs this workspace merges."""
    db.execute("""
        CREATE TABLE trusted_pack_keys (
            fingerprint TEXT PRIMARY KEY,
            public_key TEXT NOT NULL,
            name TEXT NOT NULL,
            added_at TEXT NOT NULL
        )""")


@migrations()
def m003_held_pack_records(db: Database) -> None:
    """Identities a pack cannot prove (issue 37): records held until an owner here accepts them.

    ``held`` is why a merged example, vote or round target does not count yet (NULL: it counts);
    ``validations.signer`` is the fingerprint of the pack key a merged vote came under (NULL: made
    here); ``trusted_pack_keys.person`` binds a trusted key to the one person it speaks for."""
    db.execute("ALTER TABLE annotated_examples ADD COLUMN held TEXT")
    db.execute("ALTER TABLE validations ADD COLUMN held TEXT")
    db.execute("ALTER TABLE validations ADD COLUMN signer TEXT")
    db.execute("ALTER TABLE round_models ADD COLUMN held TEXT")
    db.execute("ALTER TABLE trusted_pack_keys ADD COLUMN person TEXT")


# A pack identity's key tag in SQL: the first 16 hex digits of a fingerprint (dynadesk.annotation.pack_identity).
KEY_TAG_SQL = "substr(replace(k.fingerprint, 'sha256:', ''), 1, 16)"


@migrations()
def m004_pack_identities(db: Database) -> None:
    """Votes a pack from another machine's key carried are stored under a pack-qualified identity
    (``name@pack:<16 hex digits of the key's fingerprint>``; dynadesk.annotation.pack_identity), never under a local
    person's name. Releases before stored them under the name itself, using up that person's vote here: every such
    vote (a ``signer``, no pack mark) moves to its pack identity, created as a plain annotator."""
    tag = "substr(replace(v.signer, 'sha256:', ''), 1, 16)"
    db.execute("INSERT OR IGNORE INTO annotators (name, role, created_at) SELECT DISTINCT"
               f" v.annotator || '@pack:' || {tag}, 'annotator', MIN(v.created_at) FROM validations v"
               " WHERE v.signer IS NOT NULL AND instr(v.annotator, '@pack:') = 0"
               f" GROUP BY v.annotator || '@pack:' || {tag}")
    db.execute("UPDATE validations SET annotator = annotator || '@pack:' || substr(replace(signer, 'sha256:', ''),"
               " 1, 16) WHERE signer IS NOT NULL AND instr(annotator, '@pack:') = 0")


@migrations()
def m005_annotation_changes(db: Database) -> None:
    """A counter that every change but an added example or vote moves (dynadesk.store.annotation_facts keeps a
    round's facts between calls and reads them whole again only when it moved): an example or vote updated (a held
    record accepted) or removed, an annotator or a trusted pack key added, changed or removed (a vote's role)."""
    db.execute("CREATE TABLE annotation_changes (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)")
    db.execute("INSERT INTO annotation_changes (id, n) VALUES (1, 0)")
    for table, events in (("annotated_examples", ("UPDATE", "DELETE")), ("validations", ("UPDATE", "DELETE")),
                          ("annotators", ("INSERT", "UPDATE", "DELETE")),
                          ("trusted_pack_keys", ("INSERT", "UPDATE", "DELETE"))):
        for event in events:
            db.execute(f"CREATE TRIGGER annotation_changes_{table}_{event.lower()} AFTER {event} ON {table}"
                       " BEGIN UPDATE annotation_changes SET n = n + 1 WHERE id = 1; END")
