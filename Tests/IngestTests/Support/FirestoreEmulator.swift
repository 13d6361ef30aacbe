import Foundation
import NativeCurl

#if canImport(Glibc)
    import Glibc
#endif

/// Google's Cloud Firestore emulator (the Java server the Google Cloud SDK ships in
/// `platform/cloud-firestore-emulator`), started once per test process on a free loopback port, offline. It takes
/// unsigned JWTs as ID tokens and `Bearer owner` as an admin that security rules do not apply to. Tests that need it
/// are `.enabled(if: FirestoreEmulator.isInstalled)`: skipped, and shown as skipped, where it is absent.
/// A shell watchdog owns the JVM and stops it once the test process is gone, even after a crash.
final class FirestoreEmulator: Sendable {
    static let directory =
        ProcessInfo.processInfo.environment["INGEST_FIRESTORE_EMULATOR"]
        ?? "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator"
    static var jar: String { directory + "/cloud-firestore-emulator.jar" }

    /// The emulator's jar is there and `java` runs.
    static let isInstalled: Bool = {
        guard FileManager.default.fileExists(atPath: jar) else { return false }
        return (try? runCommand("/usr/bin/env", ["java", "-version"]).status) == 0
    }()

    /// `http://127.0.0.1:<port>`: what FIRESTORE_URL is set to.
    let base: String
    private let watchdog: Process

    nonisolated(unsafe) private static var instance: Result<FirestoreEmulator, Error>?
    private static let lock = NSLock()

    static func shared() throws -> FirestoreEmulator {
        lock.lock()
        defer { lock.unlock() }
        if instance == nil { instance = Result { try start() } }
        return try instance!.get()
    }

    private init(base: String, watchdog: Process) {
        self.base = base
        self.watchdog = watchdog
    }

    private static func start() throws -> FirestoreEmulator {
        let port = try SeaweedFS.freePorts(1)[0]
        let log = NSTemporaryDirectory() + "ingest-firestore-emulator-\(getpid()).log"
        func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let script = """
            java -Duser.language=en -Xshare:auto -XX:TieredStopAtLevel=1 -cp \(quote(jar)) \
            com.google.cloud.datastore.emulator.firestore.CloudFirestore start --host=127.0.0.1 --port=\(port) \
            >\(quote(log)) 2>&1 &
            J=$!
            trap 'kill $J 2>/dev/null; wait $J 2>/dev/null; exit 0' TERM INT HUP
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $J 2>/dev/null; do sleep 1; done
            kill $J 2>/dev/null; sleep 1; kill -9 $J 2>/dev/null
            """
        let watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        watchdog.arguments = ["-c", script]
        watchdog.standardInput = FileHandle.nullDevice
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try watchdog.run()
        let emulator = FirestoreEmulator(base: "http://127.0.0.1:\(port)", watchdog: watchdog)
        // The JVM takes seconds to start on a loaded machine: up to 1,200 attempts 100 ms apart.
        for _ in 0..<1200 where watchdog.isRunning {
            if case .success(let response) = HTTPClient.shared.perform(HTTPRequest(method: "GET", url: emulator.base)),
                response.status == 200
            {
                return emulator
            }
            usleep(100_000)
        }
        kill(watchdog.processIdentifier, SIGTERM)
        watchdog.waitUntilExit()
        let tail = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").suffix(2000)
        throw FixtureError(message: "the Firestore emulator did not start on port \(port):\n\(tail)")
    }

    /// A Firebase ID token as the emulator takes it: a JWT with `alg: none` and no signature, for `uid`.
    static func idToken(uid: String, project: String) -> String {
        func base64URL(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let now = Int(Date().timeIntervalSince1970)
        let claims =
            #"{"iss":"https://securetoken.google.com/\#(project)","aud":"\#(project)","sub":"\#(uid)","#
            + #""user_id":"\#(uid)","iat":\#(now),"exp":\#(now + 3600),"auth_time":\#(now)}"#
        return base64URL(#"{"alg":"none","typ":"JWT"}"#) + "." + base64URL(claims) + "."
    }

    /// `METHOD base/v1/projects/PROJECT/databases/(default)/documents/PATH` as the admin (`Bearer owner`).
    func call(_ method: String, project: String, _ path: String, json: String? = nil) throws -> HTTPResponse {
        var request = HTTPRequest(
            method: method, url: "\(base)/v1/projects/\(project)/databases/(default)/documents\(path)",
            body: json.map { .bytes(Array($0.utf8)) })
        request.headers = [("Authorization", "Bearer owner"), ("Content-Type", "application/json")]
        guard case .success(let response) = HTTPClient.shared.perform(request) else {
            throw FixtureError(message: "\(method) \(path) to the Firestore emulator failed")
        }
        return response
    }

    /// The documents of `collection` in `project`, each as its JSON object (name, fields, createTime, updateTime).
    func documents(project: String, _ collection: String) throws -> [[String: Any]] {
        let response = try call("GET", project: project, "/" + collection)
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (object?["documents"] as? [[String: Any]]) ?? []
    }
}
