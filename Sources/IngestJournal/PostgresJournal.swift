import Foundation
import IngestCore
import NativePostgres
import NativeSystem

/// The journal in a PostgreSQL database (`--journal postgres://…`): the same records as the SQLite journal, shared
/// by workers on several machines that ingest one tree (mounted at the same path everywhere) as a work queue.
///
/// A worker *leases* a file before any stage runs: the lease row is locked with `SELECT … FOR UPDATE SKIP LOCKED`
/// (a row another worker is claiming at that instant is skipped, not waited for), then taken if it is free, was
/// given back, or expired. A background thread renews this worker's leases every third of the lease time, so a
/// lease only expires when its worker stopped — a crash, a `kill -9`, a lost network — and another worker then takes
/// the file over. Work is taken in batches (`leaseAhead`: the records of the next files in one request, the leases
/// of those not done in another). Every write commits before it returns, its statements sent in one pipeline, and
/// the file's result and the end of its lease are one transaction, so no other worker can take a file whose result
/// is not yet recorded.
// unchecked: owns libpq connections (PGconn*): the pool under poolLock, leases and claims under stateLock
package final class PostgresJournal: @unchecked Sendable, JournalStore {
    /// The URL with its password redacted: what every message shows.
    package let path: String
    package var localFiles: [String] { [] }
    package let runID: String
    /// Names this worker in the lease table and in messages: `host:pid:run`.
    package let owner: String
    /// Seconds a lease lasts without renewal (on PostgreSQL's clock, `now()`: renewed in real time, `RealTime`).
    package let leaseSeconds: Double
    /// The run's clock: what rows' `updated_at` say.
    let clock: any WaitClock
    /// `updated_at` of a row written now.
    var rowTime: Int64 { JournalRow.time(clock.date) }

    let conninfo: String
    let secret: String?
    /// When this run started, in the database's clock: a file another worker finished after it is not redone.
    var runStart = ""
    let poolLock = NSLock()
    var pool: [PostgresConnection] = []
    /// Round trips to the server for the run's work (lease renewals aside): what each file costs (`poolLock`).
    private var roundTripCount = 0
    var roundTrips: Int { poolLock.withLock { roundTripCount } }
    /// Guards `held`, `claims`, `ahead`, `stopped`.
    let stateLock = NSCondition()
    /// Files this worker holds a lease on (`root\0relative`).
    var held: Set<String> = []
    var claims: [String: String] = [:]
    /// What `leaseAhead` found for files this worker has not asked about yet (`stateLock`).
    var ahead: [String: AheadAnswer] = [:]
    var stopped = false
    var renewer: Thread?
    var workLock: FileLock?

    /// True for `postgres://` and `postgresql://` URLs: `--journal` takes one of these or a file path.
    package static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Connects to the database at `url` and, for a writer, creates the tables if needed and starts renewing
    /// leases. `workLockPath` is locked so two workers on one machine cannot share (and clear) one work folder.
    package convenience init(
        url: String, writer: Bool = true, leaseSeconds: Double = 60, workLockPath: String? = nil,
        clock: any WaitClock = SystemClock()
    ) throws {
        try self.init(
            url: url, writer: writer, leaseSeconds: leaseSeconds, workLockPath: workLockPath, renews: true,
            clock: clock)
    }

    /// `renews: false` makes a worker that holds its leases without renewing them: a stuck one, for tests.
    init(
        url: String, writer: Bool, leaseSeconds: Double, workLockPath: String?, renews: Bool,
        clock: any WaitClock = SystemClock()
    ) throws {
        conninfo = url
        self.clock = clock
        let (display, password) = PostgresJournal.redact(url)
        path = display
        secret = password
        self.leaseSeconds = leaseSeconds
        runID = UUID().uuidString.lowercased()
        owner = "\(ProcessInfo.processInfo.hostName):\(CurrentProcess.id):\(runID.prefix(8))"
        if let workLockPath {
            do {
                workLock = try FileLock(path: workLockPath)
            } catch {
                if error.errno == FileLock.heldElsewhere {
                    throw JournalError(
                        "another ingest worker on this machine uses the work folder locked by \(workLockPath); give "
                            + "each worker its own --work-dir")
                }
                throw JournalError("cannot lock \(workLockPath): \(error.reason)")
            }
        }
        try withConnection { connection in
            if writer {
                try connection.run(script: JournalSchema.script(.postgres))
                try addMultipartTables(connection)
            } else if try connection.execute("SELECT to_regclass('ingest_files')").first?.first ?? nil == nil {
                throw PostgresError(
                    call: "open", message: "the database holds no ingest journal (run `ingest run` first)")
            }
            let version = try connection.execute("SELECT value FROM ingest_meta WHERE key = 'schema'").first?.first
            if let version = version ?? nil, version != JournalSchema.version {
                throw PostgresError(
                    call: "open",
                    message:
                        "the journal has format \(version); this ingest reads format \(JournalSchema.version)")
            }
            runStart = try connection.execute("SELECT now()").first?.first.flatMap { $0 } ?? ""
        }
        if writer && renews { startRenewing() }
    }

    deinit {
        stateLock.lock()
        stopped = true
        stateLock.broadcast()
        stateLock.unlock()
    }

    /// The URL as messages may show it (password → REDACTED, in the user part and in a `password=` parameter),
    /// and the password itself, so libpq's messages can be cleaned of it too.
    static func redact(_ url: String) -> (display: String, password: String?) {
        var display = url
        var password: String?
        if let scheme = display.range(of: "://") {
            let rest = display[scheme.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"),
                let colon = rest[..<at].firstIndex(of: ":")
            {
                let secret = String(rest[rest.index(after: colon)..<at])
                password = secret.removingPercentEncoding ?? secret
                display.replaceSubrange(rest.index(after: colon)..<at, with: Redaction.placeholder)
            }
        }
        if let query = display.firstIndex(of: "?") {
            var items = display[display.index(after: query)...].split(separator: "&").map(String.init)
            for (offset, item) in items.enumerated() where item.lowercased().hasPrefix("password=") {
                let secret = String(item.dropFirst("password=".count))
                password = password ?? (secret.removingPercentEncoding ?? secret)
                items[offset] = "password=" + Redaction.placeholder
            }
            display = String(display[...query]) + items.joined(separator: "&")
        }
        return (display, password)
    }

    // MARK: - Connections

    /// Runs `body` on a pooled connection (one per worker thread at a time; libpq connections are not
    /// thread-safe). A connection the server dropped is not put back.
    @discardableResult
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        poolLock.lock()
        let pooled = pool.popLast()
        poolLock.unlock()
        do {
            let connection = try pooled ?? PostgresConnection(conninfo: conninfo, secret: secret)
            let before = connection.roundTrips
            defer {
                poolLock.lock()
                roundTripCount += connection.roundTrips - before
                if connection.isOK { pool.append(connection) }
                poolLock.unlock()
            }
            return try body(connection)
        } catch let error as PostgresError {
            throw JournalError("journal \(path): \(error.message)", isDiskFull: error.isDiskFull)
        }
    }

    /// `body` inside BEGIN … COMMIT; a failure rolls back and is rethrown.
    @discardableResult
    func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try withConnection { connection in
            try connection.run(script: "BEGIN")
            do {
                let result = try body(connection)
                try connection.run(script: "COMMIT")
                return result
            } catch {
                try? connection.run(script: "ROLLBACK")
                throw error
            }
        }
    }

    static func key(_ root: String, _ relativePath: String) -> String { root + "\u{0}" + relativePath }
}
