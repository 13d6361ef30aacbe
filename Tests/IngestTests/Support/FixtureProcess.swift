import Foundation
import NativeCurl

#if canImport(Glibc)
    import Glibc
#endif

/// A fixture server of Tests/Fixtures (`python3 <script> <arguments> --port-file <portFile>`): the start and stop that
/// FixtureBackend, TusServer, H2Server and RedirectOrigins share. The script writes its port(s) to the file once it
/// listens; until then this waits, bounded by attempts 20 ms apart (not by measuring time), and gives up early when
/// the process exits.
struct FixtureProcess: Sendable {
    let process: Process
    /// The ports the script wrote (space-separated in the file), `count` of them.
    let ports: [Int]

    /// `attempts`: 500 is ~10 s on a loaded machine; FastAPI and hypercorn take seconds to import, so they get more.
    /// `failure`: the message thrown when the script did not start (say what to install).
    init(
        _ script: String, _ arguments: [String], portFile: String, count: Int = 1, attempts: Int = 500,
        failure: String
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [TestVenv.python, TestPaths.root + "/Tests/Fixtures/" + script] + arguments + ["--port-file", portFile]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var ports: [Int] = []
        for _ in 0..<attempts where process.isRunning {
            ports = ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").split(separator: " ")
                .compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if ports.count == count { break }
            usleep(20_000)
        }
        guard ports.count == count else {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            throw FixtureError(message: failure)
        }
        self.process = process
        self.ports = ports
    }

    /// Ends the process (SIGTERM unless told otherwise) and waits for it; a second call does nothing.
    func stop(signal: Int32 = SIGTERM) {
        if process.isRunning {
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
        }
    }
}

/// A fixture's JSON state (`GET <url>`: `/_state`, `/_stats`) as an object; over HTTPS it trusts `caBundle`.
func fixtureState(_ url: String, caBundle: String? = nil) throws -> [String: Any] {
    var request = HTTPRequest(method: "GET", url: url)
    request.caBundle = caBundle
    let result = HTTPClient.shared.perform(request)
    guard case .success(let response) = result, response.status == 200,
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    else { throw FixtureError(message: "GET \(url) failed: \(result)") }
    return object
}
