BEGIN TRANSACTION;
CREATE TABLE "_sqlite_migrations" (
   "id" INTEGER PRIMARY KEY,
   "migration_set" TEXT,
   "name" TEXT,
   "applied_at" TEXT
);
INSERT INTO "_sqlite_migrations" VALUES(1,'dynadesk.server','m001_tables','2026-12-01 10:37:43.555526+00:00');
INSERT INTO "_sqlite_migrations" VALUES(2,'dynadesk.server','m002_config_version','2026-12-01 10:37:43.560818+00:00');
INSERT INTO "_sqlite_migrations" VALUES(3,'dynadesk.server','m003_roles_times_versions','2026-12-01 10:37:43.563842+00:00');
CREATE TABLE attestations (
        id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE REFERENCES log(seq),
        bundle_id TEXT NOT NULL REFERENCES bundles(id),
        auditor_fingerprint TEXT NOT NULL REFERENCES keys(fingerprint),
        verdict TEXT NOT NULL, summary TEXT NOT NULL, created_at TEXT NOT NULL, received_at TEXT NOT NULL,
        raw BLOB NOT NULL, UNIQUE (bundle_id, auditor_fingerprint));
CREATE TABLE board (
            task TEXT NOT NULL, model_name TEXT NOT NULL, key_fingerprint TEXT NOT NULL,
            bundle_id TEXT NOT NULL, created_at TEXT NOT NULL, model_digest TEXT NOT NULL, metrics TEXT NOT NULL, created_us INTEGER, datasets TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (task, model_name, key_fingerprint));
INSERT INTO "board" VALUES('sentiment','m-old','sha256:72cd6e8422c407fb6d098690f1130b7ded7ec2f7f5e1d30bd9d521f015363793','2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881','2024-01-01T00:00:00.000Z','sha256:0000000000000000000000000000000000000000000000000000000000000000','{"perf": 1}',1704067200000000,'{"d": "sha256:1111111111111111111111111111111111111111111111111111111111111111"}');
CREATE TABLE board_datasets (
            task TEXT NOT NULL, name TEXT NOT NULL, split TEXT NOT NULL, digest TEXT NOT NULL,
            size INTEGER NOT NULL, added_at TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (task, name));
INSERT INTO "board_datasets" VALUES('sentiment','d','test','sha256:1111111111111111111111111111111111111111111111111111111111111111',3,'2026-12-01T10:37:43.573Z',1);
CREATE TABLE bundles (
            seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, task TEXT NOT NULL, model_name TEXT NOT NULL,
            model_digest TEXT NOT NULL, key_fingerprint TEXT NOT NULL REFERENCES keys(fingerprint),
            created_at TEXT NOT NULL, received_at TEXT NOT NULL, raw BLOB NOT NULL, created_us INTEGER);
INSERT INTO "bundles" VALUES(1,'2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881','sentiment','m-old','sha256:0000000000000000000000000000000000000000000000000000000000000000','sha256:72cd6e8422c407fb6d098690f1130b7ded7ec2f7f5e1d30bd9d521f015363793','2024-01-01T00:00:00.000Z','2026-12-01T10:37:43.573Z',X'7B7D',1704067200000000);
CREATE TABLE dataset_versions (
        task TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, split TEXT NOT NULL,
        digest TEXT NOT NULL, size INTEGER NOT NULL, added_at TEXT NOT NULL, PRIMARY KEY (task, name, version));
INSERT INTO "dataset_versions" VALUES('sentiment','d',1,'test','sha256:1111111111111111111111111111111111111111111111111111111111111111',3,'2026-12-01T10:37:43.573Z');
CREATE TABLE keys (
            fingerprint TEXT PRIMARY KEY, public_key BLOB NOT NULL, name TEXT NOT NULL,
            added_at TEXT NOT NULL, revoked_at TEXT, revoke_reason TEXT, role TEXT NOT NULL DEFAULT 'submitter');
INSERT INTO "keys" VALUES('sha256:72cd6e8422c407fb6d098690f1130b7ded7ec2f7f5e1d30bd9d521f015363793',X'0101010101010101010101010101010101010101010101010101010101010101','Lab M3','2026-12-01T10:37:43.572Z',NULL,NULL,'submitter');
CREATE TABLE log (
            seq INTEGER PRIMARY KEY, bundle_id TEXT NOT NULL UNIQUE, bundle_sha256 TEXT NOT NULL,
            received_at TEXT NOT NULL, prev_hash TEXT NOT NULL, entry_hash TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'bundle');
INSERT INTO "log" VALUES(1,'2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881','44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a','2026-12-01T10:37:43.573Z','0000000000000000000000000000000000000000000000000000000000000000','6084e9d0294232fa55f39bfabde5c88fc38ee4427396335c1ca274021377f987','bundle');
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('config_version','3');
CREATE UNIQUE INDEX "idx__sqlite_migrations_migration_set_name"
    ON "_sqlite_migrations" ("migration_set", "name");
CREATE INDEX bundles_task ON bundles(task, seq);
CREATE TRIGGER keys_insert_config AFTER INSERT ON keys BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'; END;
CREATE TRIGGER keys_update_config AFTER UPDATE ON keys BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'; END;
CREATE TRIGGER keys_delete_config AFTER DELETE ON keys BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'; END;
CREATE TRIGGER board_datasets_insert_config AFTER INSERT ON board_datasets BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'; END;
CREATE TRIGGER board_datasets_update_config AFTER UPDATE ON board_datasets BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'; END;
CREATE TRIGGER board_datasets_delete_config AFTER DELETE ON board_datasets BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'; END;
COMMIT;