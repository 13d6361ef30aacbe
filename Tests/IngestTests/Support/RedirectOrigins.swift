import Foundation
import IngestNative
import Testing

/// Tests/Fixtures/redirects.py: two origins (two ports of 127.0.0.1) that answer `/hop/<status>?to=<url>` with a
/// redirect and take anything at `/sink/…`; `requests()` lists what each received. `stop()` ends the process.
final class RedirectOrigins {
    let portA: Int
    let portB: Int
    private let folder: TemporaryFolder
    private let process: Process

    init() throws {
        folder = try TemporaryFolder("redirects")
        let portFile = folder.path + "/ports"
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", TestPaths.root + "/Tests/Fixtures/redirects.py", "--port-file", portFile]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var ports: [Int] = []
        for _ in 0..<500 where ports.count != 2 && process.isRunning {  // bounded: ~10 s on a loaded machine
            ports = ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").split(separator: " ")
                .compactMap { Int($0) }
            if ports.count != 2 { usleep(20_000) }
        }
        guard ports.count == 2 else {
            process.terminate()
            throw FixtureError(message: "the redirect fixture did not start")
        }
        (portA, portB) = (ports[0], ports[1])
    }

    var a: String { "http://127.0.0.1:\(portA)" }
    var b: String { "http://127.0.0.1:\(portB)" }

    /// A URL on `origin` answering `status` with `Location: target`.
    func hop(_ origin: String, _ status: Int, to target: String) -> String {
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target
        return "\(origin)/hop/\(status)?to=\(encoded)"
    }

    /// Every request either origin received: `origin` ("a"/"b"), `method`, `path`, `headers`, `bytes`.
    func requests() throws -> [[String: Any]] {
        let result = HTTPClient.shared.perform(HTTPRequest(method: "GET", url: a + "/_state"))
        guard case .success(let response) = result, response.status == 200,
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        else { throw FixtureError(message: "GET /_state failed: \(result)") }
        return (object["requests"] as? [[String: Any]]) ?? []
    }

    /// The requests `origin` ("a" or "b") received at its sink.
    func sunk(at origin: String) throws -> [[String: Any]] {
        try requests().filter {
            $0["origin"] as? String == origin && ($0["path"] as? String)?.hasPrefix("/sink/") == true
        }
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        folder.remove()
    }

    deinit { stop() }
}
