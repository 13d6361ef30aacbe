import Foundation
import Testing

@testable import Ingest
@testable import IngestCore

/// File names that are not URL-safe, placed in the URLs of `put`, `s3-post`, `request` and `verify` and sent to the
/// fixture backend's `/echo/` route, which records the request target as it arrived: the server must receive each
/// name whole, in the path and in the query, with nothing cut off or turned into parameters. `method: s3` keys are
/// checked against SeaweedFS by reading every object back.
@Suite(.serialized) struct URLEncodingTests {
    /// Every character with a meaning in a URL, a space, `café` in NFC and in NFD, an emoji, a 255-byte name.
    static let names: [String] = [
        "h#frag.mov", "q?x=1&X-Amz-Signature=evil.mov", "a&b.mov", "100%.mov", "%41%2F.mov", "a+b.mov", "a=b.mov",
        "a;b.mov", "a b.mov", "caf\u{E9}.mov", "cafe\u{301}.mov", "\u{1F3AC} clip.mov",
        String(repeating: "\u{E9}", count: 125) + "x.mov",
    ]

    /// Text compared byte for byte: Swift's `==` holds NFC and NFD `café` equal, a server does not.
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The table's files under `in/<sub>`, each holding its own name; checks the file system kept every name as
    /// given (both forms of café).
    static func makeInputs(_ folder: TemporaryFolder, sub: String = "") throws -> String {
        let input = try folder.folder("in" + (sub.isEmpty ? "" : "/" + sub))
        for name in names { try folder.file("in/" + (sub.isEmpty ? "" : sub + "/") + name, name) }
        let listed = try FileManager.default.contentsOfDirectory(atPath: input).map(bytes)
        #expect(Set(listed) == Set(names.map(bytes)), "the file system changed a name")
        #expect(bytes(names.last!).count == 255)
        return folder.path + "/in"
    }

    /// What the backend's `/echo/` route recorded for `method`: target as sent, decoded path, decoded query.
    static func received(_ backend: FixtureBackend, method: String) throws -> [(
        target: String, path: String,
        query: [[String]]
    )] {
        let echoes = try backend.state()["echo"] as? [[String: Any]] ?? []
        return echoes.filter { $0["method"] as? String == method }.map {
            ($0["target"] as? String ?? "", $0["path"] as? String ?? "", $0["query"] as? [[String]] ?? [])
        }
    }

    /// Each name arrived once as `prefix + name` in the path, with `query(name)` as the whole query, and every
    /// request target was sent as printable ASCII (encoded, nothing raw).
    static func expectEveryName(
        _ backend: FixtureBackend, method: String, prefix: String, query: (String) -> [[String]]
    ) throws {
        let got = try received(backend, method: method)
        for request in got {
            #expect(
                request.target.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F },
                "sent unencoded: \(request.target)")
        }
        for name in names {
            let matching = got.filter { bytes($0.path) == bytes(prefix + name) }
            #expect(matching.count == 1, "\(method) for '\(name)': received paths \(got.map(\.path))")
            if let request = matching.first {
                #expect(
                    request.query.map { $0.map(bytes) } == query(name).map { $0.map(bytes) },
                    "\(method) for '\(name)': query \(request.query) from \(request.target)")
            }
        }
        #expect(got.count == names.count, "\(got.map(\.target))")
    }

    static func run(_ yaml: String, in folder: TemporaryFolder, journal: Bool = false, verbose: Bool = false) throws
        -> CommandResult
    {
        let file = try folder.file("pipeline.yml", yaml)
        return try runCommand(
            TestPaths.ingest, ["run", file, "in"] + (journal ? [] : ["--no-journal"]) + (verbose ? ["-v"] : []),
            environment: environmentWithoutProxies(), directory: folder.path)
    }

    @Test func putSendsEveryNameWholeInPathAndQuery() throws {
        let backend = try FixtureBackend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("url-put")
        defer { folder.remove() }
        _ = try Self.makeInputs(folder)
        let result = try Self.run(
            """
            version: 1
            name: put
            stages:
              - upload:
                  method: put
                  url: "\(backend.base)/echo/200/put/{{file.name}}?sig=1&name={{file.name}}"

            """, in: folder, verbose: true)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        try Self.expectEveryName(backend, method: "PUT", prefix: "/echo/200/put/") { [["sig", "1"], ["name", $0]] }
        // `-v` names the file, then `: ` and the request, whatever the name holds.
        #expect(
            result.stderr.contains(
                "upload in/q?x=1&X-Amz-Signature=REDACTED: PUT \(backend.base)/echo/200/put/"
                    + "q%3Fx%3D1%26X-Amz-Signature%3Devil.mov?sig=REDACTED"
                    + "&name=q%3Fx%3D1%26X-Amz-Signature%3Devil.mov"),
            "\(result.stderr)")
    }

    @Test func s3PostSendsEveryNameWhole() throws {
        let backend = try FixtureBackend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("url-post")
        defer { folder.remove() }
        _ = try Self.makeInputs(folder)
        let result = try Self.run(
            """
            version: 1
            name: post
            stages:
              - upload:
                  method: s3-post
                  url: "\(backend.base)/echo/204/post/{{file.name}}?name={{file.name}}"
                  fields: { key: "uploads/$${filename}" }

            """, in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        try Self.expectEveryName(backend, method: "POST", prefix: "/echo/204/post/") { [["name", $0]] }
    }

    /// In a folder: `{{file.path}}` keeps its `/` as a path separator; a query name is encoded too.
    @Test func requestSendsEveryNameWholeAndKeepsPathSeparators() throws {
        let backend = try FixtureBackend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("url-request")
        defer { folder.remove() }
        _ = try Self.makeInputs(folder, sub: "sub dir")
        let result = try Self.run(
            """
            version: 1
            name: request
            stages:
              - request:
                  method: POST
                  url: "\(backend.base)/echo/200/req/{{file.path}}?name={{file.name}}&{{file.stem}}=stem"
                  json: { name: "{{file.name}}" }

            """, in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        try Self.expectEveryName(backend, method: "POST", prefix: "/echo/200/req/sub dir/") {
            [["name", $0], [($0 as NSString).deletingPathExtension, "stem"]]
        }
        for request in try Self.received(backend, method: "POST") {
            #expect(request.target.hasPrefix("/echo/200/req/sub%20dir/"), "\(request.target)")
        }
    }

    /// The call fails (500) in the first run; the second run's `verify:` read goes first, with the name encoded.
    @Test func verifySendsEveryNameWhole() throws {
        let backend = try FixtureBackend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("url-verify")
        defer { folder.remove() }
        _ = try Self.makeInputs(folder)
        let yaml = """
            version: 1
            name: verify
            stages:
              - request:
                  method: POST
                  url: "\(backend.base)/echo/500/call/{{file.name}}"
                  max_attempts: 1
                  verify: { url: "\(backend.base)/echo/404/verify/{{file.name}}?name={{file.name}}" }

            """
        let first = try Self.run(yaml, in: folder, journal: true)
        #expect(first.status == 1, "\(first.stdout)\(first.stderr)")
        #expect(try Self.received(backend, method: "GET").isEmpty)
        _ = try Self.run(yaml, in: folder, journal: true)
        try Self.expectEveryName(backend, method: "GET", prefix: "/echo/404/verify/") { [["name", $0]] }
    }

    /// `method: s3` keys: every name is stored under exactly its own key (read back byte for byte).
    @Test func s3KeysKeepEveryName() throws {
        let server = try SeaweedFS.shared()
        let bucket = "ingest-url-names"
        try server.createBucket(bucket)
        let folder = try TemporaryFolder("url-s3")
        defer { folder.remove() }
        _ = try Self.makeInputs(folder)
        let prefix = "names-\(UUID().uuidString.prefix(8))"
        let file = try folder.file(
            "pipeline.yml",
            """
            version: 1
            name: s3
            stages:
              - upload:
                  method: s3
                  endpoint: \(server.endpoint)
                  bucket: \(bucket)
                  key: "\(prefix)/{{file.name}}"
                  access_key_id: ${S3_KEY}
                  secret_access_key: ${S3_SECRET}

            """)
        let result = try runCommand(
            TestPaths.ingest, ["run", file, "in", "--no-journal"],
            environment: environmentWithoutProxies(["S3_KEY": server.accessKey, "S3_SECRET": server.secretKey]),
            directory: folder.path)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for name in Self.names {
            let get = try server.curl([
                "\(server.endpoint)/\(bucket)/\(AWSURI.encode("\(prefix)/\(name)", keepSlash: true))"
            ])
            #expect(get.status == 200 && Self.bytes(get.body) == Self.bytes(name), "\(name): \(get.status) \(get.body)")
        }
    }
}
