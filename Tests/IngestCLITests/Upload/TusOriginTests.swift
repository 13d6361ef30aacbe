import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestNetwork
@testable import IngestTestSupport

/// The headers a pipeline configures for a tus server go to that server's origin only: a creation answer whose
/// `Location` names another origin (here another port of the real tus server, Tests/Fixtures/tus_server.py
/// `--other-origin`) gets its PATCH and HEAD without them, unless `allow_origins` names that origin; `-v` says when
/// they were withheld, and why.
@Suite(.serialized) struct TusOriginTests {
    static let token = "t0ken-SECRET-5be1"

    func pipeline(_ folder: TemporaryFolder, _ server: TusServer, extra: String = "") throws -> String {
        try folder.file(
            "tus.yml",
            """
            version: 1
            name: tus-origin
            stages:
              - upload:
                  method: tus
                  url: \(server.creationURL)
                  headers: { Authorization: "Bearer ${TUS_TOKEN}" }
                  chunk_size: 128KiB
            \(extra.isEmpty ? "" : "      " + extra)
                  as: stored

            """)
    }

    /// Uploads one 300,000-byte file (three PATCHes) through `pipeline` with `-v`; the result, and the file's bytes.
    func upload(_ pipeline: String, in folder: TemporaryFolder) throws -> (CommandResult, Data?) {
        try writeRandomFile(folder.path + "/in/clip.bin", size: 300_000, seed: 29)
        let result = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "-v"],
            environment: environmentWithoutProxies(["TUS_TOKEN": Self.token]), directory: folder.path)
        return (result, FileManager.default.contents(atPath: folder.path + "/in/clip.bin"))
    }

    /// The bytes of the one upload the server holds.
    func stored(_ server: TusServer) throws -> Data? {
        try server.uploads().first.flatMap { FileManager.default.contents(atPath: $0.value.path) }
    }

    @Test func anUploadURLOnAnotherOriginGetsNoneOfTheConfiguredHeaders() throws {
        let server = try TusServer(otherOrigin: true)
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-origin")
        defer { folder.remove() }
        let (result, input) = try upload(try pipeline(folder, server), in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let stats = try server.stats()
        let (home, other) = (server.port, server.uploadPort)
        #expect(stats.requestsAt["PATCH \(other)"] == 3, "\(stats.requestsAt)")
        // The creation endpoint's origin gets the header; the upload URL's origin never does.
        #expect(stats.authorizedAt["OPTIONS \(home)"] == 1 && stats.authorizedAt["POST \(home)"] == 1)
        #expect(stats.authorizedAt["PATCH \(other)"] == 0, "\(stats.authorizedAt)")
        #expect(stats.authorized["PATCH"] == 0 && (stats.authorized["HEAD"] ?? 0) == 0, "\(stats.authorized)")
        #expect(try stored(server) == input)
        #expect(
            result.stderr.contains(
                "tus: Authorization withheld from PATCH, HEAD and DELETE http://127.0.0.1:\(other)/files/"),
            "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "the creation answer's Location names another origin (http://127.0.0.1:\(other)) than the one it "
                    + "was configured for (http://127.0.0.1:\(home)); name it in allow_origins to send it"),
            "\(result.stderr)")
        #expect(!result.stderr.contains(Self.token) && !result.stdout.contains(Self.token))
    }

    @Test func allowOriginsSendsTheHeadersToTheOriginItNames() throws {
        let server = try TusServer(otherOrigin: true)
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-origin-allowed")
        defer { folder.remove() }
        let extra = "allow_origins: [\"http://127.0.0.1:\(server.uploadPort)/\"]"
        let (result, _) = try upload(try pipeline(folder, server, extra: extra), in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let stats = try server.stats()
        #expect(stats.requestsAt["PATCH \(server.uploadPort)"] == 3, "\(stats.requestsAt)")
        #expect(stats.authorizedAt["PATCH \(server.uploadPort)"] == 3, "\(stats.authorizedAt)")
        #expect(!result.stderr.contains("withheld"), "\(result.stderr)")
    }

    /// A gateway cuts the first PATCH (502), the retry meets the server's 409, and the client asks `HEAD` for the
    /// offset: that HEAD goes to the upload URL's origin, without the headers too.
    @Test func theHEADAfterAStaleOffsetGoesWithoutThemToo() throws {
        let server = try TusServer(otherOrigin: true)
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-origin-head")
        defer { folder.remove() }
        try server.setFaults(#"[{"action": "cut"}]"#)
        let (result, input) = try upload(try pipeline(folder, server, extra: "backoff: 20ms"), in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let stats = try server.stats()
        #expect((stats.requestsAt["HEAD \(server.uploadPort)"] ?? 0) >= 1, "\(stats.requestsAt)")
        #expect(stats.authorized["PATCH"] == 0 && stats.authorized["HEAD"] == 0, "\(stats.authorized)")
        #expect(try stored(server) == input)
    }

    @Test func anAllowedOriginMustBeAnOrigin() throws {
        let folder = try TemporaryFolder("tus-origin-lint")
        defer { folder.remove() }
        for written in ["https://uploads.example.com/files", "ftp://uploads.example.com", "uploads.example.com"] {
            let file = try folder.file(
                "p.yml",
                """
                version: 1
                name: origins
                stages:
                  - upload: { method: tus, url: "https://tus.example.com/files", allow_origins: ["\(written)"] }

                """)
            #expect {
                _ = try Pipeline.load(path: file, environment: [:])
            } throws: { error in
                "\(error)".contains("'\(written)' is not an origin: write scheme, host and port only")
            }
        }
    }

    @Test func originsCompareBySchemeHostAndPort() {
        #expect(Origin(of: "HTTPS://Uploads.Example.com:443/files/1?x=1").text == "https://uploads.example.com")
        #expect(Origin(of: "http://127.0.0.1:8080/files").text == "http://127.0.0.1:8080")
        let rule = OriginRule(
            configuredFor: "https://tus.example.com/files", allowing: [Origin(of: "https://node-7.example.com")])
        #expect(rule.permits("https://tus.example.com:443/files/abc"))
        #expect(rule.permits("https://node-7.example.com/files/abc"))
        #expect(!rule.permits("http://tus.example.com/files/abc"), "another scheme is another origin")
        #expect(!rule.permits("https://tus.example.com:8443/files/abc"), "another port is another origin")
        #expect(!rule.permits("https://tus.example.com.evil.test/files/abc"))
        #expect(rule.headers([("Authorization", "Bearer x")], for: "https://evil.test/").isEmpty)
    }
}
