/// The library database's schema, as the ordered list of migrations that build it. Version N
/// is the state after the first N steps (stored in `PRAGMA user_version`); a database opens by
/// running the steps it has not had yet, each in its own transaction. Steps are never edited
/// once shipped: a change is a new step, and `LibraryMigrationTests` opens a database of every
/// earlier version.
public enum LibrarySchema {
    public static let migrations: [String] = [
        // 1: owners and their items.
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value BLOB NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO meta (key, value) VALUES ('owner_salt', randomblob(32));
        CREATE TABLE owners (
            name TEXT PRIMARY KEY,
            version INTEGER NOT NULL,
            item_count INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            changed_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE items (
            sequence INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            owner TEXT NOT NULL REFERENCES owners (name),
            added_ms INTEGER NOT NULL,
            matched_ms INTEGER NOT NULL,
            catalog TEXT NOT NULL,
            catalog_version INTEGER NOT NULL,
            custom_properties TEXT NOT NULL CHECK (json_valid(custom_properties)),
            body BLOB NOT NULL
        );
        CREATE INDEX items_newest_first ON items (owner, matched_ms DESC, sequence DESC);
        """,
        // 2: the change log, so a watcher that reconnects resumes from its version.
        """
        CREATE TABLE changes (
            owner TEXT NOT NULL,
            version INTEGER NOT NULL,
            kind INTEGER NOT NULL,
            item_ids TEXT NOT NULL,
            at_ms INTEGER NOT NULL,
            PRIMARY KEY (owner, version)
        ) WITHOUT ROWID;
        """,
    ]

    /// The version this build writes.
    public static var currentVersion: Int64 { Int64(migrations.count) }
}
