internal import CPostgres
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed libpq call: the call, the server's SQLSTATE when it sent one, and libpq's own text
/// (`PQerrorMessage` / `PQresultErrorMessage`), kept verbatim — never the connection string's password.
package struct PostgresError: Error, Equatable, Sendable, CustomStringConvertible {
    package var call: String
    /// Five-character SQLSTATE (`40P01` deadlock, `53100` disk full …), empty for client-side failures.
    package var sqlState: String
    package var message: String

    package init(call: String, sqlState: String = "", message: String) {
        self.call = call
        self.sqlState = sqlState
        self.message = message
    }

    package var description: String { "\(call): \(message)" }

    /// `53100 disk_full` (and the other insufficient-resources codes of class 53).
    package var isDiskFull: Bool { sqlState.hasPrefix("53") }
}

/// An open connection (`PQconnectdb`); `deinit` closes it (`PQfinish`). Not thread-safe: one thread at a time,
/// as libpq requires. Parameters are sent as text, separately from the SQL (`PQexecParams`), never spliced in.
package final class PostgresConnection {
    private let handle: OpaquePointer
    /// Removed from any message before it leaves this class (libpq does not print it, but a server may echo it).
    private let secret: String?

    /// Connects with a libpq connection string or `postgres://` URI. `secret` is the password to keep out of errors.
    package init(conninfo: String, secret: String? = nil) throws(PostgresError) {
        // A very short password would blank out ordinary words; it is unlikely to be echoed anyway.
        self.secret = secret.flatMap { $0.count < 3 ? nil : $0 }
        guard let opened = PQconnectdb(conninfo) else {
            throw PostgresError(call: "PQconnectdb", message: "out of memory")
        }
        guard PQstatus(opened) == CONNECTION_OK else {
            let message = PostgresConnection.text(PQerrorMessage(opened), hiding: self.secret)
            PQfinish(opened)
            throw PostgresError(call: "PQconnectdb", message: message)
        }
        handle = opened
        // The server's NOTICEs ("relation … already exists, skipping") would go to standard error: not for users.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// Requests sent and answered on this connection (a statement, a script, a pipeline): what a journal's cost per
    /// file is counted in, since each is one wait for the server.
    package private(set) var roundTrips = 0

    /// Runs one statement with `$1`, `$2` … bound to `parameters` (nil is NULL) and returns its rows, each column as
    /// text or nil. A statement that returns no rows gives an empty array.
    @discardableResult
    package func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> [[String?]] {
        roundTrips += 1
        let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let result: OpaquePointer? = copies.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                PQexecParams(handle, sql, Int32(parameters.count), nil, values.baseAddress, nil, nil, 0)
            }
        }
        guard let result else {
            throw PostgresError(
                call: PostgresConnection.shorten(sql),
                message: PostgresConnection.text(PQerrorMessage(handle), hiding: secret))
        }
        defer { PQclear(result) }
        if let failure = failure(of: result, sql: sql) { throw failure }
        return PostgresConnection.rows(of: result)
    }

    /// Runs `statements` (each with its parameters, as `execute`) in one round trip — libpq's pipeline mode, one
    /// sync at the end — as one implicit transaction: all of them commit, or none (the first failure is thrown).
    /// Their rows come back in order. Keep pipelines short: in blocking mode, answers must fit the socket buffers.
    package func pipeline(_ statements: [(sql: String, parameters: [String?])]) throws(PostgresError) -> [[[String?]]] {
        roundTrips += 1
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError(
                call: "PQenterPipelineMode", message: PostgresConnection.text(PQerrorMessage(handle), hiding: secret))
        }
        for (sql, parameters) in statements {
            let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.map { strdup($0) } ?? nil }
            defer { copies.forEach { free($0) } }
            let sent = copies.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                    PQsendQueryParams(handle, sql, Int32(parameters.count), nil, values.baseAddress, nil, nil, 0)
                }
            }
            guard sent == 1 else { throw broken(PostgresConnection.shorten(sql)) }
        }
        guard PQpipelineSync(handle) == 1 else { throw broken("PQpipelineSync") }
        var answers: [[[String?]]] = []
        var firstFailure: PostgresError?
        for (sql, _) in statements {
            var rows: [[String?]] = []
            // Each statement's results, then nil.
            while let result = PQgetResult(handle) {
                if let failure = failure(of: result, sql: sql) {
                    firstFailure = firstFailure ?? failure
                } else {
                    rows += PostgresConnection.rows(of: result)
                }
                PQclear(result)
            }
            answers.append(rows)
        }
        // The sync's own result ends the pipeline.
        while let result = PQgetResult(handle) {
            let synced = PQresultStatus(result) == PGRES_PIPELINE_SYNC
            PQclear(result)
            if synced { break }
        }
        guard PQexitPipelineMode(handle) == 1 else { throw broken("PQexitPipelineMode") }
        if let firstFailure { throw firstFailure }
        return answers
    }

    /// A connection left mid-pipeline cannot be used again: `isOK` turns false, so its owner opens a new one.
    private func broken(_ call: String) -> PostgresError {
        let failure = PostgresError(
            call: call, message: PostgresConnection.text(PQerrorMessage(handle), hiding: secret))
        isBroken = true
        return failure
    }

    private var isBroken = false

    /// The server's error for `result`, nil when it succeeded (a statement skipped after an earlier failure in
    /// a pipeline is no error of its own).
    private func failure(of result: OpaquePointer, sql: String) -> PostgresError? {
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_PIPELINE_ABORTED { return nil }
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        return PostgresError(
            call: PostgresConnection.shorten(sql), sqlState: state,
            message: PostgresConnection.text(PQresultErrorMessage(result), hiding: secret))
    }

    /// A result's rows, each column as text or nil.
    private static func rows(of result: OpaquePointer) -> [[String?]] {
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        var rows: [[String?]] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [String?] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) != 0 {
                    values.append(nil)
                } else {
                    values.append(String(cString: PQgetvalue(result, row, column)))
                }
            }
            rows.append(values)
        }
        return rows
    }

    /// Runs statements separated by `;` with no parameters (`PQexec`): schema, BEGIN/COMMIT.
    package func run(script sql: String) throws(PostgresError) {
        roundTrips += 1
        guard let result = PQexec(handle, sql) else {
            throw PostgresError(
                call: PostgresConnection.shorten(sql),
                message: PostgresConnection.text(PQerrorMessage(handle), hiding: secret))
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            throw PostgresError(
                call: PostgresConnection.shorten(sql), sqlState: state,
                message: PostgresConnection.text(PQresultErrorMessage(result), hiding: secret))
        }
    }

    /// False once the server closed the connection (a restart): the owner opens a new one.
    package var isOK: Bool { !isBroken && PQstatus(handle) == CONNECTION_OK }

    private static func text(_ message: UnsafePointer<CChar>?, hiding secret: String?) -> String {
        var text = message.map { String(cString: $0) } ?? "unknown error"
        while text.hasSuffix("\n") { text.removeLast() }
        if let secret { text = text.replacingOccurrences(of: secret, with: "REDACTED") }
        return text
    }

    /// The first words of a statement, for error messages.
    private static func shorten(_ sql: String) -> String {
        let words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" }).prefix(6).joined(separator: " ")
        return words.count < sql.count ? words + " …" : words
    }

    /// libpq's version (`PQlibVersion`, e.g. 150018).
    package static var libraryVersion: Int { Int(PQlibVersion()) }
}
