import Foundation
import NativePostgres
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's PostgreSQL server (`apt install postgresql`: initdb and pg_ctl under /usr/lib/postgresql/N/bin) for
/// tests: started once per test process on 127.0.0.1 and a free port, with a password (scram-sha-256, so URLs carry
/// one to redact), fsync off, its data in a temp folder. PostgreSQL refuses to run as root, so under root the
/// folder is given to the `postgres` user (or `nobody`) and the server runs as that user (`runuser`).
///
/// A shell watchdog stops it (`pg_ctl stop -m immediate`) and removes the folder when the test process is gone.
///
///     let server = try PostgresServer.shared()
///     let url = try server.createDatabase()   // postgres://ingest:…@127.0.0.1:port/ingest_…
final class PostgresServer: @unchecked Sendable {
    let port: Int
    let user = "ingest"
    let password = "pg-test-s3cret"
    let logPath: String
    private let folder: String
    private let watchdog: Process

    nonisolated(unsafe) private static var instance: Result<PostgresServer, Error>?
    private static let instanceLock = NSLock()

    enum Failure: Error, CustomStringConvertible {
        case notInstalled(searched: [String])
        case didNotStart(String)

        var description: String {
            switch self {
            case .notInstalled(let searched):
                return "PostgreSQL's initdb was not found (apt install postgresql, or set INGEST_PG_BIN); looked in: "
                    + searched.joined(separator: ", ")
            case .didNotStart(let reason): return "PostgreSQL did not start: \(reason)"
            }
        }
    }

    /// The process-wide server, started on first use; a failed start is remembered.
    static func shared() throws -> PostgresServer {
        instanceLock.lock()
        defer { instanceLock.unlock() }
        if instance == nil {
            instance = Result { try PostgresServer.start() }
            if case .success = instance { atexit { PostgresServer.stopShared() } }
        }
        return try instance!.get()
    }

    /// True when PostgreSQL's binaries are there: tests that need the server are enabled by it (`.postgres`), so
    /// without them they show as skipped rather than passing having checked nothing.
    static var isInstalled: Bool { (try? findBinaries()) != nil }

    /// The folder holding initdb, pg_ctl: `INGEST_PG_BIN` when set (only it), else the newest
    /// /usr/lib/postgresql/N/bin.
    static func findBinaries() throws -> String {
        var searched: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["INGEST_PG_BIN"] {
            guard FileManager.default.isExecutableFile(atPath: explicit + "/initdb") else {
                throw Failure.notInstalled(searched: [explicit])
            }
            return explicit
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            searched.append("/usr/lib/postgresql/\(version)/bin")
        }
        if searched.isEmpty { searched.append("/usr/lib/postgresql/*/bin") }
        if let found = searched.first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }) {
            return found
        }
        throw Failure.notInstalled(searched: searched)
    }

    /// A new, empty database; returns its URL (with the password).
    func createDatabase() throws -> String {
        let name = "ingest_\(getpid())_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(conninfo: url(database: "postgres"), secret: password)
        try admin.execute("CREATE DATABASE \(name)")
        return url(database: name)
    }

    func url(database: String) -> String { "postgres://\(user):\(password)@127.0.0.1:\(port)/\(database)" }

    private init(port: Int, folder: String, watchdog: Process) {
        self.port = port
        self.folder = folder
        self.logPath = folder + "/postgres.log"
        self.watchdog = watchdog
    }

    private static func stopShared() {
        instanceLock.lock()
        defer { instanceLock.unlock() }
        if case .success(let server)? = instance, server.watchdog.isRunning {
            kill(server.watchdog.processIdentifier, SIGTERM)
            server.watchdog.waitUntilExit()
        }
    }

    private static func start() throws -> PostgresServer {
        let bin = try findBinaries()
        let folder = NSTemporaryDirectory() + "ingest-postgres-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let port = try SeaweedFS.freePorts(1)[0]
        func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        // Root runs the server as an unprivileged user that owns the folder.
        var asUser = ""
        if geteuid() == 0 {
            let account = getpwnam("postgres") != nil ? "postgres" : "nobody"
            guard let entry = getpwnam(account) else { throw Failure.didNotStart("no postgres or nobody user") }
            chown(folder, entry.pointee.pw_uid, entry.pointee.pw_gid)
            asUser = "runuser -u \(account) -- "
        }
        let server = PostgresServer(port: port, folder: folder, watchdog: Process())
        try Data((server.password + "\n").utf8).write(to: URL(fileURLWithPath: folder + "/pwfile"))
        if geteuid() == 0, let entry = getpwnam(getpwnam("postgres") != nil ? "postgres" : "nobody") {
            chown(folder + "/pwfile", entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        let data = quote(folder + "/data")
        let initdb = try runCommand(
            "/bin/sh",
            [
                "-c",
                "\(asUser)\(quote(bin + "/initdb")) -D \(data) -U \(server.user) --pwfile=\(quote(folder + "/pwfile")) "
                    + "-A scram-sha-256 --no-sync --no-instructions -E UTF8 --locale=C.UTF-8 >\(quote(folder + "/initdb.log")) 2>&1",
            ])
        guard initdb.status == 0 else {
            let log = (try? String(contentsOfFile: folder + "/initdb.log", encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: folder)
            throw Failure.didNotStart("initdb failed: \(log)")
        }
        // The server runs in the foreground under a watchdog shell (pg_ctl's daemon keeps the pipes of whoever
        // started it open), which stops it and removes the folder when the test process is gone or on TERM.
        let options = "-h 127.0.0.1 -p \(port) -k \(quote(folder)) -F -c max_connections=200 -c shared_buffers=16MB"
        let script = """
            \(asUser)\(quote(bin + "/postgres")) -D \(data) \(options) >\(quote(server.logPath)) 2>&1 &
            W=$!
            stop() {
              \(asUser)\(quote(bin + "/pg_ctl")) -D \(data) -m immediate stop >/dev/null 2>&1
              kill $W 2>/dev/null; wait $W 2>/dev/null
              rm -rf \(quote(folder))
              exit 0
            }
            trap stop TERM INT HUP
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $W 2>/dev/null; do sleep 1; done
            stop
            """
        let watchdog = server.watchdog
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        watchdog.arguments = ["-c", script]
        watchdog.standardInput = FileHandle.nullDevice
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try watchdog.run()
        // Ready once a connection succeeds; bounded by attempts, not by measuring time.
        var lastError = "no answer"
        for _ in 0..<240 {
            do {
                _ = try PostgresConnection(conninfo: server.url(database: "postgres"), secret: server.password)
                return server
            } catch {
                lastError = error.message
            }
            guard watchdog.isRunning else { break }
            usleep(250_000)
        }
        let log = (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? ""
        kill(watchdog.processIdentifier, SIGTERM)
        watchdog.waitUntilExit()
        throw Failure.didNotStart("\(lastError)\n--- log ---\n\(log)")
    }
}

extension Trait where Self == ConditionTrait {
    /// For a test that needs the PostgreSQL server: skipped (and shown so) where PostgreSQL is not installed.
    static var postgres: Self {
        .enabled(
            if: PostgresServer.isInstalled,
            "PostgreSQL is not installed (apt install postgresql, or set INGEST_PG_BIN to the folder of its initdb)")
    }
}
