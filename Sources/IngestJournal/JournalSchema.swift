/// The journal's tables, described once for both SQL dialects: the SQLite file (`meta`, `files`, `stages`) and the
/// PostgreSQL database (the same tables prefixed `ingest_`, plus the leases and claims of its work queue). Each
/// dialect renders the whole script, run as one transaction: a kill leaves all of the schema or none of it.
enum JournalSchema {
    /// The format both backends write and read; a journal of another format is refused, not rewritten.
    static let version = "1"

    /// The columns of `files` that make a `JournalRecord`, in the order `JournalRecord(row:)` reads them.
    static let recordColumns = """
        id, root, relative_path, path, size, mtime_ns, inode, sha256, pipeline, config_hash, state, attempts, \
        failures, reason, facts, template_values, dedupe_key, duplicate_of, side_effects, run_id
        """

    /// How one dialect spells what the schema needs.
    struct Dialect {
        /// Put before every table and index name (the PostgreSQL database may hold other tables).
        var prefix: String
        var begin: String
        var rowID: String
        /// 64-bit integers: sizes, times, inodes, file ids.
        var int64: String
        /// Paths sort and compare byte by byte (SQLite's default; `COLLATE "C"` in PostgreSQL).
        var bytewise: String
        var insertOrIgnore: String
        var ignoreConflict: String
        var stagesOptions: String
        /// The tables only this dialect has, each line ending in a newline.
        var ownTables: String

        static let sqlite = Dialect(
            prefix: "", begin: "BEGIN IMMEDIATE;", rowID: "INTEGER", int64: "INTEGER", bytewise: "",
            insertOrIgnore: "INSERT OR IGNORE INTO", ignoreConflict: "", stagesOptions: " WITHOUT ROWID",
            ownTables: "")

        /// Under an advisory lock: workers starting together do not race to create the tables.
        static let postgres = Dialect(
            prefix: "ingest_", begin: "BEGIN;\nSELECT pg_advisory_xact_lock(7238190043);", rowID: "BIGSERIAL",
            int64: "BIGINT", bytewise: " COLLATE \"C\"", insertOrIgnore: "INSERT INTO",
            ignoreConflict: " ON CONFLICT DO NOTHING", stagesOptions: "", ownTables: JournalSchema.workQueueTables)
    }

    /// The script that creates the tables (if missing) and records the format, in `dialect`.
    static func script(_ dialect: Dialect) -> String {
        let (p, int64, bytewise) = (dialect.prefix, dialect.int64, dialect.bytewise)
        return """
            \(dialect.begin)
            CREATE TABLE IF NOT EXISTS \(p)meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            \(dialect.insertOrIgnore) \(p)meta(key, value) VALUES ('schema', '\(version)')\(dialect.ignoreConflict);
            CREATE TABLE IF NOT EXISTS \(p)files(
                id \(dialect.rowID) PRIMARY KEY,
                root TEXT\(bytewise) NOT NULL,
                relative_path TEXT\(bytewise) NOT NULL,
                path TEXT NOT NULL,
                size \(int64), mtime_ns \(int64), inode \(int64), sha256 TEXT,
                pipeline TEXT NOT NULL, config_hash TEXT NOT NULL,
                state TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                failures TEXT, reason TEXT, facts TEXT, template_values TEXT,
                dedupe_key TEXT, duplicate_of TEXT,
                side_effects INTEGER NOT NULL DEFAULT 0,
                run_id TEXT,
                updated_at \(int64) NOT NULL,
                UNIQUE(root, relative_path));
            CREATE INDEX IF NOT EXISTS \(p)files_dedupe ON \(p)files(dedupe_key) WHERE dedupe_key IS NOT NULL;
            CREATE TABLE IF NOT EXISTS \(p)stages(
                file_id \(int64) NOT NULL REFERENCES \(p)files(id) ON DELETE CASCADE,
                position INTEGER NOT NULL,
                name TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                outputs TEXT, error TEXT,
                updated_at \(int64) NOT NULL,
                PRIMARY KEY(file_id, position))\(dialect.stagesOptions);
            \(dialect.ownTables)COMMIT;
            """
    }

    /// PostgreSQL's work queue: a lease per file a worker holds (or finished), and the dedupe keys claimed by
    /// files in flight.
    fileprivate static let workQueueTables = """
        CREATE TABLE IF NOT EXISTS ingest_leases(
            root TEXT COLLATE "C" NOT NULL,
            relative_path TEXT COLLATE "C" NOT NULL,
            owner TEXT NOT NULL,
            expires_at TIMESTAMPTZ,
            finished_at TIMESTAMPTZ,
            PRIMARY KEY(root, relative_path));
        CREATE INDEX IF NOT EXISTS ingest_leases_owner ON ingest_leases(owner) WHERE expires_at IS NOT NULL;
        CREATE TABLE IF NOT EXISTS ingest_claims(
            dedupe_key TEXT PRIMARY KEY,
            root TEXT COLLATE "C" NOT NULL,
            relative_path TEXT COLLATE "C" NOT NULL,
            path TEXT NOT NULL,
            owner TEXT NOT NULL);

        """
}
