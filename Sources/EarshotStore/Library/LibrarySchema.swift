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
        // 3: custom properties and catalogs indexed, so a filtered page reads only the items
        // that pass the filter. item_properties holds each item's top-level properties as
        // "<json type>:<minified JSON value>", kept by triggers; existing items are filled in.
        """
        CREATE TABLE item_properties (
            owner TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            matched_ms INTEGER NOT NULL,
            sequence INTEGER NOT NULL,
            PRIMARY KEY (owner, key, value, matched_ms DESC, sequence DESC)
        ) WITHOUT ROWID;
        CREATE INDEX item_properties_by_item ON item_properties (sequence);
        CREATE TRIGGER item_properties_added AFTER INSERT ON items BEGIN
            INSERT OR IGNORE INTO item_properties (owner, key, value, matched_ms, sequence)
            SELECT NEW.owner, key, type || ':' || json_quote(value), NEW.matched_ms, NEW.sequence FROM json_each(NEW.custom_properties);
        END;
        CREATE TRIGGER item_properties_removed AFTER DELETE ON items BEGIN
            DELETE FROM item_properties WHERE sequence = OLD.sequence;
        END;
        INSERT OR IGNORE INTO item_properties (owner, key, value, matched_ms, sequence)
        SELECT items.owner, p.key, p.type || ':' || json_quote(p.value), items.matched_ms, items.sequence
        FROM items, json_each(items.custom_properties) AS p;
        CREATE INDEX items_by_catalog ON items (owner, catalog, matched_ms DESC, sequence DESC);
        """,
    ]

    /// The version this build writes.
    public static var currentVersion: Int64 { Int64(migrations.count) }
}
