import Foundation
import Testing

@testable import IngestNetwork
@testable import IngestTestSupport

/// `ingest presign put|post` as a user runs it: output shape, reproducibility with --date, usage errors (exit 2)
/// that name what is wrong, and no secret in any of it.
@Suite struct PresignCommandTests {
    static let environment = [
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+SECRET",
        "AWS_REGION": "eu-west-1",
    ]

    func ingest(_ arguments: [String], environment: [String: String] = Self.environment) throws -> CommandResult {
        try runCommand(TestPaths.ingest, ["presign"] + arguments, environment: environment)
    }

    @Test func putPrintsAReproducibleURL() throws {
        let arguments = [
            "put", "s3://my-bucket/clips/game 1.mov", "--date", "20241219T143022Z", "--content-type", "video/quicktime",
            "--expires", "900",
        ]
        let first = try ingest(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.isEmpty)
        #expect(try ingest(arguments).stdout == first.stdout)
        let expected = try S3Presigner(
            credentials: AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+SECRET"),
            region: "eu-west-1", endpoint: S3Endpoint(region: "eu-west-1")
        ).presignedURL(
            method: "PUT", location: S3Location(bucket: "my-bucket", key: "clips/game 1.mov"), expires: 900,
            headers: [("Content-Type", "video/quicktime")], date: SigV4Signer.date(fromTimestamp: "20241219T143022Z"))
        #expect(first.stdout == expected + "\n")
        #expect(
            first.stdout.hasPrefix(
                "https://my-bucket.s3.eu-west-1.amazonaws.com/clips/game%201.mov?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                    + "&X-Amz-Credential=AKIDEXAMPLE%2F20241219%2Feu-west-1%2Fs3%2Faws4_request"
                    + "&X-Amz-Date=20241219T143022Z"
                    + "&X-Amz-SignedHeaders=content-type%3Bhost&X-Amz-Expires=900&X-Amz-Signature="))
        #expect(!first.stdout.contains("SECRET"))
    }

    @Test func postPrintsOneJSONLine() throws {
        let result = try ingest([
            "post", "s3://my-bucket/", "--starts-with", "uploads/", "--content-type", "audio/m4a",
            "--content-length-range", "1,100MiB", "--success-action-status", "201", "--date", "20241219T143022Z",
            "--endpoint", "http://127.0.0.1:9000",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["url"] as? String == "http://127.0.0.1:9000/my-bucket/")
        let fields = try #require(object["fields"] as? [String: String])
        #expect(fields["key"] == "uploads/${filename}")
        #expect(fields["Content-Type"] == "audio/m4a")
        #expect(fields["success_action_status"] == "201")
        #expect(fields["x-amz-date"] == "20241219T143022Z")
        #expect(fields["x-amz-signature"]?.count == 64)
        // Field order is the form's order: the key first, the signature last.
        #expect(lines[0].hasPrefix(#"{"url":"http://127.0.0.1:9000/my-bucket/","fields":{"key":"#))
        #expect(lines[0].hasSuffix(#""x-amz-signature":"\#(fields["x-amz-signature"]!)"}}"#))

        let policy = try S3PostPolicy(decodingFields: fields)
        #expect(policy.contentLengthRange == 1...104_857_600)
        #expect(policy.successActionStatus == 201)
        let now = try SigV4Signer.date(fromTimestamp: "20241219T150000Z")
        #expect(policy.check(fileSize: 10, key: "uploads/a.m4a", now: now).isEmpty)
        #expect(policy.check(fileSize: 10, key: "a.m4a", now: now).map(\.rule) == ["key"])
    }

    @Test func missingCredentialsAreAUsageError() throws {
        let none = try ingest(["put", "s3://my-bucket/k"], environment: [:])
        #expect(none.status == 2)
        #expect(none.stdout.isEmpty)
        #expect(
            none.stderr
                == "ingest presign: missing AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                + "(and AWS_SESSION_TOKEN for temporary credentials)\n")
        let noSecret = try ingest(["post", "s3://my-bucket/k"], environment: ["AWS_ACCESS_KEY_ID": "AKID"])
        #expect(noSecret.status == 2)
        #expect(noSecret.stderr.contains("set AWS_SECRET_ACCESS_KEY"))
        #expect(!noSecret.stderr.contains("AWS_ACCESS_KEY_ID and"))
        var noRegion = Self.environment
        noRegion["AWS_REGION"] = nil
        let region = try ingest(["put", "s3://my-bucket/k"], environment: noRegion)
        #expect(region.status == 2)
        #expect(region.stderr == "ingest presign: missing AWS region: set AWS_REGION (or pass --region)\n")
        #expect(try ingest(["put", "s3://my-bucket/k", "--region", "us-east-1"], environment: noRegion).status == 0)
    }

    @Test(arguments: [
        (["put", "my-bucket/k"], "is not an S3 location (expected s3://BUCKET/KEY): it does not start with s3://"),
        (["put", "s3://my-bucket"], "has no key: a PUT needs s3://BUCKET/KEY"),
        (["put", "s3://my-bucket/k", "--expires", "0"], "--expires must be 1 to 604800 seconds (7 days), found 0"),
        (["put", "s3://my-bucket/k", "--date", "2024-12-19"], "is not a signing time (expected YYYYMMDDTHHMMSSZ"),
        (["put", "s3://my-bucket/k", "--endpoint", "localhost:9000"], "is not an S3 endpoint"),
        (["post", "s3://my-bucket/k", "--content-length-range", "10"], "--content-length-range must be MIN,MAX"),
        (["post", "s3://my-bucket/k", "--content-length-range", "9,1"], "--content-length-range must be MIN,MAX"),
        (["post", "s3://my-bucket/k", "--success-action-status", "302"], "must be 200, 201 or 204, found 302"),
        (
            ["post", "s3://my-bucket/a/k", "--starts-with", "b/"],
            "the key 'a/k' does not start with --starts-with 'b/'"
        ),
        (["post", "s3://my-bucket/"], "has no key: give s3://BUCKET/KEY or --starts-with PREFIX"),
    ])
    func usageErrors(_ arguments: [String], message: String) throws {
        let result = try ingest(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stdout)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("SECRET"))
    }

    @Test func helpListsTheOptions() throws {
        let put = try ingest(["put", "--help"])
        #expect(put.status == 0)
        for option in ["--expires", "--region", "--endpoint", "--path-style", "--content-type", "--date"] {
            #expect(put.stdout.contains(option), "put --help lacks \(option)")
        }
        let post = try ingest(["post", "--help"])
        for option in ["--content-length-range", "--starts-with", "--success-action-status"] {
            #expect(post.stdout.contains(option), "post --help lacks \(option)")
        }
    }
}
