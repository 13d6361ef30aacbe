import Foundation
import Testing

@testable import IngestCheck
@testable import IngestConfig
@testable import IngestTestSupport

/// `ingest lint` names every variable `ingest run` and `ingest run --dry-run` will need and that is not set — not
/// only `${VAR}`s but the AWS credentials and region a `method: s3` upload signs with, and `{{env.NAME}}` — and
/// says `ingest validate` needs none of them.
@Suite struct LintEnvironmentTests {
    static let s3Pipeline = """
        version: 1
        name: to-my-bucket
        stages:
          - validate: { extensions: [jpg] }
          - upload:
              method: s3
              bucket: my-bucket
              key: "{{file.name}}"
        """

    static func messages(_ yaml: String, _ environment: [String: String], strict: Bool = false) -> [String] {
        Pipeline.lint(yaml: yaml, source: "p.yml", environment: environment, strictEnvironment: strict)
            .map(\.description)
    }

    @Test func anS3UploadNamesTheCredentialsAndRegionThatAreNotSet() {
        let said = Self.messages(Self.s3Pipeline, [:])
        #expect(said.count == 2, "\(said)")
        #expect(
            said.contains {
                $0.hasPrefix(
                    "p.yml:5:5: warning: environment variables 'AWS_ACCESS_KEY_ID' and 'AWS_SECRET_ACCESS_KEY' "
                        + "are not set: upload (method: s3) signs its requests")
                    && $0.contains("'ingest run' and 'ingest run --dry-run' stop before the first file")
                    && $0.contains("'ingest validate' needs none")
            }, "\(said)")
        #expect(
            said.contains { $0.hasPrefix("p.yml:5:5: warning: environment variable 'AWS_REGION' is not set") },
            "\(said)")
        let strict = Self.messages(Self.s3Pipeline, [:], strict: true)
        #expect(strict.count == 2 && strict.allSatisfy { $0.contains(": error: ") }, "\(strict)")
    }

    @Test func oneMissingKeyIsNamedAloneAndTheDefaultRegionCounts() {
        let said = Self.messages(Self.s3Pipeline, ["AWS_ACCESS_KEY_ID": "AKID", "AWS_DEFAULT_REGION": "eu-north-1"])
        #expect(said.count == 1, "\(said)")
        #expect(said.first?.contains("environment variable 'AWS_SECRET_ACCESS_KEY' is not set") == true, "\(said)")
    }

    @Test func nothingIsSaidWhenTheEnvironmentOrThePipelineHasThem() {
        let set = ["AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-north-1"]
        #expect(Self.messages(Self.s3Pipeline, set).isEmpty)
        let written =
            Self.s3Pipeline + """

                      endpoint: http://127.0.0.1:9000
                      access_key_id: AKID
                      secret_access_key: secret
                """
        #expect(Self.messages(written, [:]).isEmpty, "\(Self.messages(written, [:]))")
        // An empty value is no value (as the upload reads them).
        #expect(Self.messages(Self.s3Pipeline, set.merging(["AWS_REGION": ""]) { $1 }).count == 1)
    }

    /// A stage left out for an unset `${S3_BUCKET}` still needs its credentials: both are named.
    @Test func aStageLeftOutForAnUnsetVariableStillNamesItsCredentials() {
        let yaml = Self.s3Pipeline.replacingOccurrences(of: "bucket: my-bucket", with: "bucket: ${S3_BUCKET}")
        let said = Self.messages(yaml, [:])
        for name in ["'S3_BUCKET'", "'AWS_ACCESS_KEY_ID'", "'AWS_REGION'"] {
            #expect(said.contains { $0.contains(name) }, "\(name): \(said)")
        }
    }

    @Test func anEnvTemplateNamesItsVariable() {
        let yaml = """
            version: 1
            name: env
            stages:
              - request: { url: "https://api.example.com/x", headers: { X-Key: "{{env.API_KEY}}" } }
            """
        let said = Self.messages(yaml, [:])
        #expect(
            said == [
                "p.yml:4:5: warning: environment variable 'API_KEY' is not set: {{env.API_KEY}} reads it, so "
                    + "request fails each file that reaches it"
            ], "\(said)")
        #expect(Self.messages(yaml, ["API_KEY": "k"]).isEmpty)
    }

    /// Through the command: the warnings are printed, lint exits 0, and `ingest validate` runs without them.
    @Test func theCommandPrintsThemAndValidateNeedsNone() throws {
        let folder = try TemporaryFolder("lint-environment")
        defer { folder.remove() }
        let file = try folder.file("p.yml", Self.s3Pipeline)
        try copySample("good/photo.jpg", to: folder.path + "/in/photo.jpg")
        let path = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        let lint = try runCommand(TestPaths.ingest, ["lint", file], environment: path)
        #expect(lint.status == 0, "\(lint.stdout)\(lint.stderr)")
        #expect(lint.stdout.contains("warning: environment variable 'AWS_REGION' is not set"), "\(lint.stdout)")
        let validate = try runCommand(
            TestPaths.ingest, ["validate", file, "in"], environment: path, directory: folder.path)
        #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")
    }
}
