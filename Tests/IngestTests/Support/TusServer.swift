import Foundation
import NativeCurl

@testable import Ingest

/// Tests/Fixtures/tus_server.py: fastapi-tusd, a real tus 1.0 server, at `<base>/files`, storing uploads in
/// `store` (each upload a file named by its id, beside `<id>.info`). `stop()` ends the process this object started.
final class TusServer {
    let port: Int
    /// With `otherOrigin`: the second port, which the creation answers' `Location` names (else `port`).
    let uploadPort: Int
    let folder: TemporaryFolder
    private let server: FixtureProcess

    /// `checksum`: the server announces and checks the checksum extension (a cut PATCH then keeps nothing);
    /// `maxPatchBytes`: PATCH bodies above it are refused with 413; `otherOrigin`: the server listens on a second
    /// port, and the upload URLs it hands back (`Location`) are on that one.
    init(checksum: Bool = false, maxPatchBytes: Int? = nil, otherOrigin: Bool = false) throws {
        folder = try TemporaryFolder("tus")
        server = try FixtureProcess(
            "tus_server.py",
            ["--store", folder.path + "/store"] + (checksum ? ["--checksum"] : [])
                + (maxPatchBytes.map { ["--max-patch-bytes", String($0)] } ?? [])
                + (otherOrigin ? ["--other-origin"] : []),
            portFile: folder.path + "/port", count: otherOrigin ? 2 : 1,
            attempts: 1500,  // FastAPI takes seconds to import when loaded
            failure: "tus_server.py did not start (are fastapi-tusd and uvicorn installed? make test-deps)")
        port = server.ports[0]
        uploadPort = server.ports.last ?? port
    }

    var creationURL: String { "http://127.0.0.1:\(port)/files" }
    var store: String { folder.path + "/store" }

    struct Stats {
        var patchBytes: Int64
        var requests: [String: Int]
        var deleted: [String]
        var checksums: Int
        /// PATCHes that carried `Upload-Checksum`, and the answers the client got, as "PATCH 409" → count.
        var checksumHeaders = 0
        var answers: [String: Int] = [:]
        /// Requests that carried an `Authorization` header, by method.
        var authorized: [String: Int] = [:]
        /// Requests, and those that carried `Authorization`, by method and port (`PATCH 40123`).
        var requestsAt: [String: Int] = [:]
        var authorizedAt: [String: Int] = [:]
    }

    func stats() throws -> Stats {
        let object = try fixtureState("http://127.0.0.1:\(port)/_stats")
        var stats = Stats(
            patchBytes: (object["patch_bytes"] as? NSNumber)?.int64Value ?? -1,
            requests: object["requests"] as? [String: Int] ?? [:], deleted: object["deleted"] as? [String] ?? [],
            checksums: object["checksums"] as? Int ?? -1)
        stats.checksumHeaders = object["checksum_headers"] as? Int ?? -1
        stats.answers = object["answers"] as? [String: Int] ?? [:]
        stats.authorized = object["authorized"] as? [String: Int] ?? [:]
        stats.requestsAt = object["requests_at"] as? [String: Int] ?? [:]
        stats.authorizedAt = object["authorized_at"] as? [String: Int] ?? [:]
        return stats
    }

    /// Replaces the server's faults (Tests/Fixtures/tus_faults.py): `cut`, `corrupt`, `expire`.
    func setFaults(_ json: String) throws {
        let result = HTTPClient.shared.perform(
            HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/_faults", body: .bytes(Array(json.utf8))))
        guard case .success(let response) = result, response.status == 204 else {
            throw FixtureError(message: "POST /_faults failed: \(result)")
        }
    }

    /// The upload expires on the server: later requests for it get 404.
    func forget(_ id: String) throws {
        let result = HTTPClient.shared.perform(
            HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/_forget/\(id)", body: .bytes([])))
        guard case .success(let response) = result, response.status == 204 else {
            throw FixtureError(message: "POST /_forget failed: \(result)")
        }
    }

    /// The `Upload-Metadata` the server keeps for upload `id` (values decoded).
    func metadata(_ id: String) throws -> [String: String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: store + "/" + id + ".info"))
        let info = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return info?["metadata"] as? [String: String] ?? [:]
    }

    /// The uploads the server holds: id → (filename from the metadata, offset, stored bytes' path).
    func uploads() throws -> [String: (filename: String, offset: Int64, path: String)] {
        var found: [String: (filename: String, offset: Int64, path: String)] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? [] where name.hasSuffix(".info") {
            let data = try Data(contentsOf: URL(fileURLWithPath: store + "/" + name))
            guard let info = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { continue }
            let id = String(name.dropLast(5))
            let metadata = info["metadata"] as? [String: String] ?? [:]
            found[id] = (
                metadata["filename"] ?? "", (info["offset"] as? NSNumber)?.int64Value ?? -1, store + "/" + id
            )
        }
        return found
    }

    /// Killed, not asked: uvicorn's graceful stop would wait on the test client's kept-alive connection.
    func stop() {
        server.stop(signal: SIGKILL)
        folder.remove()
    }

    deinit { stop() }
}
