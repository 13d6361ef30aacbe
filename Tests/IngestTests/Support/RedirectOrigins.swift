import Foundation
import Testing

/// Tests/Fixtures/redirects.py: two origins (two ports of 127.0.0.1) that answer `/hop/<status>?to=<url>` with a
/// redirect and take anything at `/sink/…`; `requests()` lists what each received. `stop()` ends the process.
final class RedirectOrigins {
    let portA: Int
    let portB: Int
    private let folder: TemporaryFolder
    private let server: FixtureProcess

    init() throws {
        folder = try TemporaryFolder("redirects")
        server = try FixtureProcess(
            "redirects.py", [], portFile: folder.path + "/ports", count: 2,
            failure: "the redirect fixture did not start")
        (portA, portB) = (server.ports[0], server.ports[1])
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
        (try fixtureState(a + "/_state")["requests"] as? [[String: Any]]) ?? []
    }

    /// The requests `origin` ("a" or "b") received at its sink.
    func sunk(at origin: String) throws -> [[String: Any]] {
        try requests().filter {
            $0["origin"] as? String == origin && ($0["path"] as? String)?.hasPrefix("/sink/") == true
        }
    }

    func stop() {
        server.stop()
        folder.remove()
    }

    deinit { stop() }
}
