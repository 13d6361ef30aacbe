import Foundation
import NativeCurl
import Testing

/// Tests/Fixtures/backend.py, started for one test on 127.0.0.1 with a port the kernel picks, with that test's
/// faults; `state()` reads what it received (`GET /_state`), `stop()` ends it (the process this object started).
final class FixtureBackend: Sendable {
    let port: Int
    let folder: TemporaryFolder
    let scheme: String
    private let server: FixtureProcess

    /// The S3 bucket signed URLs upload into, when the fixture forwards them to a real S3 server.
    let bucket: String?

    /// `faults`: the JSON list the fixture documents (`[{"method": "PUT", "action": "status", "status": 500}]`).
    /// `s3`: hand out SigV4 presigned URLs that the fixture counts and forwards to this server's `bucket` (created
    /// here), so the server checks signature, Content-Type and expiry and stores the objects.
    /// `upstream`: a server (SeaweedFS) that requests outside the fixture's own routes are forwarded to, faults first.
    /// `s3Post`: a real S3 bucket that seed 003's tickets point at (presigned POSTs signed with its keys).
    /// `urlTTL`: seconds the signed URLs and POST policies it hands out stay valid (default 900).
    /// `tls`: PEM certificate and key to serve HTTPS with.
    /// `acceptRepeats`: a backend that does not refuse a repeated callback with 409 but acts on it again (200),
    /// counting it under `callback_repeats`.
    /// `urlStyle`: the form of the signed URLs it hands out (`aws`, `gcs`, `gcs-v2`, `azure`; default `aws`).
    /// `firebaseToken`: the one Bearer token seed 000's Firestore accepts (any when nil); `jobStep`: seconds between
    /// two steps of its analysis jobs (default 0.3).
    init(
        faults: String = "[]", bearer: String? = nil, s3: SeaweedFS? = nil, bucket: String = "ingest-seeds",
        upstream: String? = nil, s3Post: (server: SeaweedFS, bucket: String)? = nil, urlTTL: Int? = nil,
        tls: (cert: String, key: String)? = nil, acceptRepeats: Bool = false, urlStyle: String? = nil,
        firebaseToken: String? = nil, jobStep: Double? = nil
    ) throws {
        scheme = tls == nil ? "http" : "https"
        var s3Arguments: [String] = []
        if let s3 {
            try s3.createBucket(bucket)
            let settings: [String: String] = [
                "endpoint": s3.endpoint, "access_key": s3.accessKey, "secret_key": s3.secretKey, "region": s3.region,
                "bucket": bucket,
            ]
            s3Arguments = [
                "--s3", String(decoding: try JSONSerialization.data(withJSONObject: settings), as: UTF8.self),
            ]
        }
        self.bucket = s3 == nil ? nil : bucket
        folder = try TemporaryFolder("backend")
        let arguments =
            ["--faults", faults] + (bearer.map { ["--bearer", $0] } ?? []) + s3Arguments
            + (upstream.map { ["--upstream", $0] } ?? [])
            + (urlTTL.map { ["--url-ttl", String($0)] } ?? []) + (tls.map { ["--tls", $0.cert, $0.key] } ?? [])
            + (acceptRepeats ? ["--accept-repeats"] : [])
            + (urlStyle.map { ["--url-style", $0] } ?? [])
            + (firebaseToken.map { ["--firebase-token", $0] } ?? []) + (jobStep.map { ["--job-step", "\($0)"] } ?? [])
            + (s3Post.map {
                [
                    "--s3-post", "\($0.server.endpoint)/\($0.bucket)", "--s3-access-key", $0.server.accessKey,
                    "--s3-secret-key", $0.server.secretKey, "--s3-region", $0.server.region,
                ]
            } ?? [])
        server = try FixtureProcess(
            "backend.py", arguments, portFile: folder.path + "/port", failure: "the fixture backend did not start")
        port = server.ports[0]
    }

    var base: String { "\(scheme)://127.0.0.1:\(port)" }

    /// The fixture's `/_state` as a JSON object (over HTTPS, trusting `caBundle`).
    func state(caBundle: String? = nil) throws -> [String: Any] {
        try fixtureState(base + "/_state", caBundle: caBundle)
    }

    func objects() throws -> [String: [String: Any]] { (try state()["objects"] as? [String: [String: Any]]) ?? [:] }
    func counts(_ kind: String) throws -> [String: Int] { (try state()[kind] as? [String: Int]) ?? [:] }
    func requests() throws -> [[Any]] { (try state()["requests"] as? [[Any]]) ?? [] }

    /// Replaces the fixture's faults (`POST /_faults`), e.g. `[]` to make a slow endpoint fast again.
    func setFaults(_ json: String) throws {
        var request = HTTPRequest(method: "POST", url: base + "/_faults", body: .bytes(Array(json.utf8)))
        request.headers = [("Content-Type", "application/json")]
        let result = HTTPClient.shared.perform(request)
        guard case .success(let response) = result, response.status == 200 else {
            throw FixtureError(message: "POST /_faults failed: \(result)")
        }
    }

    /// Moves the fixture's clock forward by `seconds` (`POST /_clock`): its tickets, signed URLs and policies
    /// expire as if that time had passed, with no wait.
    func advanceClock(by seconds: Double) throws {
        var request = HTTPRequest(
            method: "POST", url: base + "/_clock", body: .bytes(Array(#"{"advance": \#(seconds)}"#.utf8)))
        request.headers = [("Content-Type", "application/json")]
        let result = HTTPClient.shared.perform(request)
        guard case .success(let response) = result, response.status == 200 else {
            throw FixtureError(message: "POST /_clock failed: \(result)")
        }
    }

    func stop() {
        server.stop()
        folder.remove()
    }

    deinit { stop() }
}

struct FixtureError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// The environment for `ingest` in network tests: the test's own, without proxies (loopback must be direct).
func environmentWithoutProxies(_ extra: [String: String] = [:]) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.lowercased().hasSuffix("_proxy") }
    for (key, value) in extra { environment[key] = value }
    return environment
}

/// A file of `size` pseudo-random bytes (deterministic per seed), written in 1 MiB pieces. Eight bytes per xorshift
/// step: the tests are a debug build, where a loop per byte cost a second of CPU per 48 MiB.
@discardableResult
func writeRandomFile(_ path: String, size: Int, seed: UInt64 = 1) throws -> String {
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var remaining = size
    while remaining > 0 {
        let count = min(remaining, 1 << 20)
        var words = [UInt64](repeating: 0, count: (count + 7) / 8)
        for index in words.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            words[index] = state
        }
        try words.withUnsafeBytes { try handle.write(contentsOf: $0.prefix(count)) }
        remaining -= count
    }
    return path
}

/// SHA-256 of a file, by the `sha256sum` tool (an oracle independent of the code under test).
func sha256sum(_ path: String) throws -> String {
    String(try runTool("sha256sum", [path]).stdout.prefix(64))
}

/// The journal's identity of a file (`xxh3-128:<hex>`), by the `xxhsum -H2` tool (an oracle independent of the code).
func journalIdentity(_ path: String) throws -> String {
    "xxh3-128:" + String(try runTool("xxhsum", ["-H2", path]).stdout.prefix(32))
}

/// A self-signed certificate for 127.0.0.1 made by `openssl req` in `folder`: (cert, key) PEM paths. The
/// certificate is its own CA, so it is also the `ca_bundle` that makes clients trust it.
func makeSelfSignedCertificate(in folder: TemporaryFolder) throws -> (cert: String, key: String) {
    let cert = folder.path + "/cert.pem"
    let key = folder.path + "/key.pem"
    let made = try runTool(
        "openssl",
        [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
            "-out", cert, "-days", "2", "-subj",
            "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
    guard made.status == 0 else { throw FixtureError(message: "openssl req failed: \(made.stderr)") }
    return (cert, key)
}

/// Starts `ingest ARGUMENTS` in `directory` in the background with no proxies from the environment and its output
/// discarded (`standardError` may be a Pipe to read it), for tests that signal or kill a run midway; `environment`
/// adds variables (a seed pipeline's API base URL).
func startIngest(
    _ arguments: [String], in directory: String, standardError: Any = FileHandle.nullDevice,
    environment: [String: String] = [:]
) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: TestPaths.ingest)
    process.arguments = arguments
    process.environment = environmentWithoutProxies(environment)
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = standardError
    try process.run()
    return process
}

/// Starts `ingest ARGUMENTS` as `startIngest` does and kills it with SIGKILL once `ready` holds, polling every
/// 50 ms while it runs (bounded by `polls`: about 20 s on a loaded machine). A run that never got there fails the
/// test, naming `point`, so a kill at the wrong moment cannot pass for the crash a test is about.
func killIngest(
    _ arguments: [String], in directory: String, environment: [String: String] = [:], polls: Int = 400,
    at point: String, when ready: () -> Bool
) throws {
    let process = try startIngest(arguments, in: directory, environment: environment)
    var reached = false
    for _ in 0..<polls where process.isRunning {
        if ready() {
            reached = true
            break
        }
        usleep(50_000)
    }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    try #require(reached, "the run never reached \(point)")
}
