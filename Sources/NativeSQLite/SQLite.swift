internal import CSQLite
internal import CSQLiteShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed SQLite call: the call, SQLite's result code and its own text (`sqlite3_errmsg`), kept verbatim so a
/// user sees "database is locked" or "database or disk is full" rather than a bare number.
package struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The C function (or statement) that failed.
    package var call: String
    /// The primary result code (`SQLITE_FULL` …, the low byte of an extended code).
    package var code: Int32
    package var message: String

    package init(call: String, code: Int32, message: String) {
        self.call = call
        self.code = code
        self.message = message
    }

    package var description: String { "\(call): \(message)" }

    /// The disk (or the file-size limit) is full: a run fails the file and goes on.
    package var isDiskFull: Bool { code == SQLITE_FULL }
    /// Another connection holds the lock longer than the busy timeout.
    package var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    /// A UNIQUE, PRIMARY KEY or other constraint refused the row (only that statement was undone).
    package var isConstraint: Bool { code == SQLITE_CONSTRAINT }
}

/// One value bound to or read from a statement.
package enum SQLiteValue: Equatable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
}

/// An open database connection (`sqlite3_open_v2`); `deinit` closes it (`sqlite3_close_v2`). Not thread-safe by
/// itself (opened with `SQLITE_OPEN_NOMUTEX`): the owner serialises access, which it must do anyway to group
/// writes into transactions.
package final class Database {
    fileprivate let handle: OpaquePointer
    package let path: String
    /// Released only after the connection is closed: a `SharedFileDescriptor` of the database file, which must
    /// not be closed while SQLite holds locks on the file through this connection.
    package var keepAlive: AnyObject?

    /// Opens (and with `create`, creates) the file at `path`.
    package init(path: String, readOnly: Bool = false, create: Bool = true) throws(SQLiteError) {
        var flags = SQLITE_OPEN_NOMUTEX
        if readOnly {
            flags |= SQLITE_OPEN_READONLY
        } else {
            flags |= SQLITE_OPEN_READWRITE
            if create { flags |= SQLITE_OPEN_CREATE }
        }
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard code == SQLITE_OK, let opened else {
            // Even a failed open may hand back a handle carrying the message; it must be closed.
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            if let opened { sqlite3_close_v2(opened) }
            throw SQLiteError(call: "sqlite3_open_v2(\(path))", code: code & 0xFF, message: message)
        }
        handle = opened
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs one or more statements that return no rows (`sqlite3_exec`): schema, pragmas, BEGIN/COMMIT.
    package func execute(_ sql: String) throws(SQLiteError) {
        var errorText: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &errorText)
        guard code == SQLITE_OK else {
            let message = errorText.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errorText)
            throw SQLiteError(call: Database.shorten(sql), code: code & 0xFF, message: message)
        }
    }

    /// Compiles `sql` (`sqlite3_prepare_v2`).
    package func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(database: self, sql: sql)
    }

    /// Milliseconds a statement waits for another connection's lock before failing with `SQLITE_BUSY`.
    package func setBusyTimeout(milliseconds: Int32) { sqlite3_busy_timeout(handle, milliseconds) }

    /// Rows changed by the last INSERT, UPDATE or DELETE (`sqlite3_changes`).
    package var changes: Int { Int(sqlite3_changes(handle)) }
    /// `sqlite3_last_insert_rowid`.
    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    /// False inside an explicit transaction (`sqlite3_get_autocommit`).
    package var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    fileprivate func error(_ call: String, _ code: Int32) -> SQLiteError {
        SQLiteError(call: call, code: code & 0xFF, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// The first words of a statement, for error messages.
    fileprivate static func shorten(_ sql: String) -> String {
        let words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" }).prefix(6).joined(separator: " ")
        return words.count < sql.count ? words + " …" : words
    }

    /// SQLite's own version string (`sqlite3_libversion`).
    package static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}

/// A compiled statement (`sqlite3_prepare_v2`); `deinit` finalizes it. It keeps its database alive. Bind, then
/// `step()` until it returns false; `reset()` makes it ready for the next binding.
package final class Statement {
    private let handle: OpaquePointer
    private let database: Database
    private let sql: String

    fileprivate init(database: Database, sql: String) throws(SQLiteError) {
        var prepared: OpaquePointer?
        let code = sqlite3_prepare_v2(database.handle, sql, -1, &prepared, nil)
        guard code == SQLITE_OK, let prepared else {
            throw database.error("sqlite3_prepare_v2(\(Database.shorten(sql)))", code)
        }
        handle = prepared
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds the values to `?1`, `?2` … in order (after a reset of earlier bindings).
    package func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let number): code = sqlite3_bind_int64(handle, index, number)
            case .real(let number): code = sqlite3_bind_double(handle, index, number)
            case .text(let text):
                // SQLITE_TRANSIENT: SQLite copies the bytes, since Swift's buffer lives only inside the closure.
                var text = text
                code = text.withUTF8 { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { chars in
                        sqlite3_bind_text(
                            handle, index, chars.baseAddress, Int32(chars.count), ingest_sqlite_transient())
                    }
                }
            }
            guard code == SQLITE_OK else { throw database.error("sqlite3_bind(\(Database.shorten(sql)))", code) }
        }
    }

    /// Advances to the next row: true when a row is available, false when the statement is done.
    @discardableResult
    package func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let failure = database.error("sqlite3_step(\(Database.shorten(sql)))", code)
            sqlite3_reset(handle)
            throw failure
        }
    }

    /// Binds, runs to completion and resets: for INSERT, UPDATE and DELETE.
    package func run(_ values: [SQLiteValue] = []) throws(SQLiteError) {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Binds and returns every row (each as its columns' values), then resets.
    package func rows(_ values: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        try bind(values)
        defer { sqlite3_reset(handle) }
        var rows: [[SQLiteValue]] = []
        while try step() { rows.append(currentRow()) }
        return rows
    }

    /// Binds and calls `body` with each row in turn without collecting them (for tables of any size).
    package func forEachRow(
        _ values: [SQLiteValue] = [], _ body: ([SQLiteValue]) throws -> Void
    ) throws {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() { try body(currentRow()) }
    }

    /// Ready for new bindings; releases the read lock a finished SELECT may hold.
    package func reset() { sqlite3_reset(handle) }

    /// The current row's columns.
    package func currentRow() -> [SQLiteValue] {
        (0..<sqlite3_column_count(handle)).map(column)
    }

    /// One column of the current row (`sqlite3_column_*`).
    package func column(_ index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, index))
        case SQLITE_NULL: return .null
        default:
            guard let text = sqlite3_column_text(handle, index) else { return .null }
            let count = Int(sqlite3_column_bytes(handle, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        }
    }
}

extension SQLiteValue {
    package var int: Int64? {
        switch self {
        case .integer(let number): return number
        case .real(let number): return Int64(exactly: number)
        case .text(let text): return Int64(text)
        case .null: return nil
        }
    }

    package var string: String? {
        switch self {
        case .text(let text): return text
        case .integer(let number): return String(number)
        case .real(let number): return String(number)
        case .null: return nil
        }
    }
}

extension Database {
    /// Closing the last connection then leaves the write-ahead log as it is, rather than folding it into the
    /// database file (a checkpoint and its fsyncs, at the end of every run). SQLite still checkpoints as the log
    /// grows (every 1,000 pages), and the next connection reads through the log.
    package func keepWriteAheadLogOnClose() throws(SQLiteError) {
        let code = ingest_sqlite_no_checkpoint_on_close(handle)
        guard code == SQLITE_OK else { throw error("sqlite3_db_config(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE)", code) }
    }
}
