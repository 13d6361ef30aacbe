import Foundation
import Testing

@testable import IngestCore
@testable import IngestNetwork
@testable import IngestTestSupport

/// Against a real S3 server that checks signatures (SeaweedFS), with the `curl` CLI as the client: what
/// `ingest presign` and the signer produce is accepted, and anything tampered, expired or off-policy is refused
/// with S3's error code.
@Suite struct S3ServerTests {
    let server: SeaweedFS
    let bucket = "ingest-s3-tests"

    init() throws {
        server = try SeaweedFS.shared()
        try server.createBucket(bucket)
    }

    var environment: [String: String] {
        ["AWS_ACCESS_KEY_ID": server.accessKey, "AWS_SECRET_ACCESS_KEY": server.secretKey, "AWS_REGION": server.region]
    }

    /// A file of `size` bytes with varied content (so truncation or reordering would show).
    func file(_ folder: TemporaryFolder, _ name: String, size: Int) throws -> (path: String, data: Data) {
        var bytes = [UInt8](repeating: 0, count: size)
        var state: UInt32 = 2_463_534_242
        for index in bytes.indices {
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            bytes[index] = UInt8(truncatingIfNeeded: state)
        }
        let path = folder.path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, Data(bytes))
    }

    /// `curl` with the status code appended; returns status and body.
    func curl(_ arguments: [String]) throws -> (status: Int, body: String) {
        let result = try runCommand("/usr/bin/env", ["curl", "-sS", "-w", "\n%{http_code}"] + arguments)
        #expect(result.status == 0, "curl failed: \(result.stderr)")
        let newline = try #require(result.stdout.lastIndex(of: "\n"))
        return (Int(result.stdout[result.stdout.index(after: newline)...]) ?? -1, String(result.stdout[..<newline]))
    }

    /// The `<Code>` of S3's XML error body.
    func errorCode(_ body: String) -> String? {
        guard let start = body.range(of: "<Code>"),
            let end = body.range(of: "</Code>", range: start.upperBound..<body.endIndex)
        else { return nil }
        return String(body[start.upperBound..<end.lowerBound])
    }

    /// Reads an object back with curl's own SigV4 (independent of the signer under test).
    func readBack(_ key: String) throws -> Data {
        let folder = try TemporaryFolder("s3-read")
        defer { folder.remove() }
        let out = folder.path + "/object"
        let encoded = AWSURI.encode(key, keepSlash: true)
        let result = try server.curl(["-o", out, "\(server.endpoint)/\(bucket)/\(encoded)"])
        #expect(result.status == 200, "reading \(key) back answered \(result.status)")
        return (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data()
    }

    func presign(_ arguments: [String]) throws -> String {
        let result = try runCommand(
            TestPaths.ingest, ["presign"] + arguments + ["--endpoint", server.endpoint], environment: environment)
        #expect(result.status == 0, "ingest presign \(arguments): \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .newlines)
    }

    /// The last hex digit of the signature flipped: still well-formed, certainly wrong.
    func tamper(_ url: String) -> String {
        var url = url
        let last = url.removeLast()
        url.append(last == "0" ? "1" : "0")
        return url
    }

    @Test func presignedPUTUploadsAndReadsBackIdentical() throws {
        let folder = try TemporaryFolder("s3-put")
        defer { folder.remove() }
        let (path, data) = try file(folder, "clip.mov", size: 300_000)
        let key = "games/2024 final/clip #1+ሴ.mov"
        let url = try presign(["put", "s3://\(bucket)/\(key)", "--content-type", "video/quicktime"])
        let put = try curl(["-T", path, "-H", "Content-Type: video/quicktime", url])
        #expect(put.status == 200, "\(put.body)")
        #expect(try readBack(key) == data)
    }

    @Test func presignedPUTRefusals() throws {
        let folder = try TemporaryFolder("s3-put-refused")
        defer { folder.remove() }
        let (path, _) = try file(folder, "a.jpg", size: 1000)
        let url = try presign(["put", "s3://\(bucket)/refused/a.jpg", "--content-type", "image/jpeg"])

        let tampered = try curl(["-T", path, "-H", "Content-Type: image/jpeg", tamper(url)])
        #expect(tampered.status == 403)
        #expect(errorCode(tampered.body) == "SignatureDoesNotMatch", "\(tampered.body)")

        let wrongType = try curl(["-T", path, "-H", "Content-Type: image/png", url])
        #expect(wrongType.status == 403)
        #expect(errorCode(wrongType.body) == "SignatureDoesNotMatch", "\(wrongType.body)")

        // Signed two days ago for one minute: long expired, whatever the clock says now.
        let past = SigV4Signer.timestamp(for: Date().addingTimeInterval(-2 * 86400))
        let expired = try presign(["put", "s3://\(bucket)/refused/a.jpg", "--date", past, "--expires", "60"])
        let late = try curl(["-T", path, expired])
        #expect(late.status == 403)
        #expect(errorCode(late.body) == "AccessDenied", "\(late.body)")
        #expect(late.body.contains("expired"), "\(late.body)")

        // Nothing was stored by the refused requests.
        let head = try server.curl(["-I", "\(server.endpoint)/\(bucket)/refused/a.jpg"])
        #expect(head.status == 404)
    }

    /// Sends a presigned POST form with curl: the fields in order, then the file.
    func post(_ json: String, file path: String, replacing replacements: [String: String] = [:]) throws -> (
        status: Int, body: String
    ) {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let url = try #require(object["url"] as? String)
        // JSONSerialization loses the order; the printed line has it.
        let fields = try #require(object["fields"] as? [String: String])
        let order = fields.keys.sorted {
            json.range(of: "\"\($0)\":")!.lowerBound < json.range(of: "\"\($1)\":")!.lowerBound
        }
        var arguments: [String] = []
        for name in order { arguments += ["--form-string", "\(name)=\(replacements[name] ?? fields[name]!)"] }
        return try curl(arguments + ["-F", "file=@\(path)", url])
    }

    @Test func presignedPOSTAcceptedAndPolicyEnforced() throws {
        let folder = try TemporaryFolder("s3-post")
        defer { folder.remove() }
        let (small, smallData) = try file(folder, "visit.m4a", size: 5000)
        let (big, _) = try file(folder, "too-big.m4a", size: 20_001)
        let form = try presign([
            "post", "s3://\(bucket)/", "--starts-with", "visits/", "--content-type", "audio/m4a",
            "--content-length-range", "1,20000",
        ])

        let accepted = try post(form, file: small)
        #expect(accepted.status == 204, "\(accepted.body)")
        #expect(try readBack("visits/visit.m4a") == smallData)  // ${filename} filled in by the server

        let tooBig = try post(form, file: big)
        #expect(tooBig.status == 400, "\(tooBig.body)")
        #expect(errorCode(tooBig.body) == "EntityTooLarge", "\(tooBig.body)")
        // ingest's own check says the same before any request.
        let fields = try #require(
            (try JSONSerialization.jsonObject(with: Data(form.utf8)) as? [String: Any])?["fields"] as? [String: String])
        #expect(
            try S3PostPolicy(decodingFields: fields).check(fileSize: 20_001, key: "visits/too-big.m4a", now: Date())
                .map(
                    \.description)
                == ["content-length-range 1..20000: file is 20001 bytes"])

        let wrongType = try post(form, file: small, replacing: ["Content-Type": "audio/mp4"])
        #expect(wrongType.status == 403)
        #expect(errorCode(wrongType.body) == "AccessDenied", "\(wrongType.body)")

        let wrongKey = try post(form, file: small, replacing: ["key": "elsewhere/${filename}"])
        #expect(wrongKey.status == 403)
        #expect(errorCode(wrongKey.body) == "AccessDenied", "\(wrongKey.body)")

        let badSignature = try post(
            form, file: small, replacing: ["x-amz-signature": String(repeating: "0", count: 64)])
        #expect(badSignature.status == 403)
        #expect(errorCode(badSignature.body) == "SignatureDoesNotMatch", "\(badSignature.body)")
    }

    @Test func presignedPOSTWithSuccessActionStatus() throws {
        let folder = try TemporaryFolder("s3-post-201")
        defer { folder.remove() }
        let (path, data) = try file(folder, "photo.jpg", size: 2000)
        let form = try presign(["post", "s3://\(bucket)/photos/car.jpg", "--success-action-status", "201"])
        let accepted = try post(form, file: path)
        #expect(accepted.status == 201, "\(accepted.body)")
        #expect(try readBack("photos/car.jpg") == data)
    }

    /// PUT and GET signed in the Authorization header by SigV4Signer, sent by curl with exactly those headers.
    @Test func headerSignedRequests() throws {
        let folder = try TemporaryFolder("s3-headers")
        defer { folder.remove() }
        let (path, data) = try file(folder, "data.bin", size: 70_000)
        let signer = SigV4Signer.s3(
            credentials: AWSCredentials(accessKeyID: server.accessKey, secretAccessKey: server.secretKey),
            region: server.region)
        let url = "\(server.endpoint)/\(bucket)/signed/a b%.bin"
            .replacingOccurrences(of: " ", with: "%20").replacingOccurrences(of: "%.", with: "%25.")

        /// Signs with `signer`, then sends exactly the signed fields (optionally altering one afterwards).
        func send(
            _ method: String, payload: SigV4Payload, extra: [String] = [], alter: String? = nil
        ) throws -> (status: Int, body: String) {
            let request = try SigV4Request(
                method: method, url: url, headers: [("Content-Type", "application/octet-stream")], payload: payload)
            var arguments = ["-X", method, "-H", "Content-Type: application/octet-stream"]
            for (name, value) in signer.signHeaders(request, date: Date()).headers {
                arguments += ["-H", "\(name): \(name == alter ? self.tamper(value) : value)"]
            }
            return try curl(arguments + extra + [url])
        }

        let put = try send("PUT", payload: .hashing(data), extra: ["--data-binary", "@\(path)"])
        #expect(put.status == 200, "\(put.body)")
        let downloaded = folder.path + "/downloaded"
        let get = try send("GET", payload: .empty, extra: ["-o", downloaded])
        #expect(get.status == 200)
        #expect(try Data(contentsOf: URL(fileURLWithPath: downloaded)) == data)

        let tampered = try send("GET", payload: .empty, alter: "Authorization")
        #expect(tampered.status == 403)
        #expect(errorCode(tampered.body) == "SignatureDoesNotMatch", "\(tampered.body)")

        // The body hash is signed: changing x-amz-content-sha256 after signing is refused. (SeaweedFS does not
        // compare that header with the body it receives, as AWS does with XAmzContentSHA256Mismatch, so a wrong
        // body under a correctly signed hash cannot be tested against it.)
        let other = try file(folder, "other.bin", size: 100)
        let alteredHash = try send(
            "PUT", payload: .hashing(other.data), extra: ["--data-binary", "@\(other.path)"],
            alter: "x-amz-content-sha256")
        #expect(alteredHash.status == 403)
        #expect(errorCode(alteredHash.body) == "SignatureDoesNotMatch", "\(alteredHash.body)")
        #expect(try readBack("signed/a b%.bin") == data)
    }
}
