import Foundation
import Testing

@testable import IngestTestSupport

/// `ingest run --dry-run` and `ingest test`, through the CLI: both rehearse the network stages (requests rendered,
/// answered without sending).
@Suite("Rehearsal")
struct RehearsalTests {
    static let pet = "6f1c2d3e-4b5a-4c6d-8e7f-0123456789ab"

    /// A run folder holding Samples/good/voice.m4a in its pet's folder, as vet-audio expects.
    func vetFolder() throws -> TemporaryFolder {
        let folder = try TemporaryFolder("dryrun")
        let target = try folder.folder("visits/\(Self.pet)") + "/voice.m4a"
        try FileManager.default.copyItem(atPath: TestPaths.root + "/Samples/good/voice.m4a", toPath: target)
        return folder
    }

    @Test("--dry-run prints each request redacted, and the fixture backend receives nothing; no journal")
    func dryRunSendsNothing() throws {
        let backend = try FixtureBackend(bearer: "vet-secret-jwt-1")
        defer { backend.stop() }
        let folder = try vetFolder()
        defer { folder.remove() }
        let result = try runCommand(
            TestPaths.ingest, ["run", "--dry-run", TestPaths.root + "/pipelines/vet-audio.yml", "visits"],
            environment: environmentWithoutProxies([
                "HELPPET_API": backend.base, "HELPPET_TOKEN": "vet-secret-jwt-1", "PETS_MANIFEST": "",
            ]),
            directory: folder.path)
        #expect(result.status == 0, "\(result.stderr)")
        let shown = result.stdout.replacingOccurrences(of: backend.base, with: "http://API")
            .replacingOccurrences(
                of: #"boundary=ingest-[0-9a-f]+"#, with: "boundary=B", options: .regularExpression)
        let expected = """
            ok    visits/\(Self.pet)/voice.m4a  mov 1.50s aac
                request (as ticket): POST http://API/api/v1/visit-transcripts/audio/upload/initiate
                  Authorization: Bearer REDACTED
                  Accept: application/json
                  Content-Type: application/json
                  | {"pet_id":"\(Self.pet)","filename":"voice.m4a","content_type":"audio/m4a","estimated_duration_seconds":1.5}
                upload (as stored): POST <ticket.upload_url>
                  Content-Type: multipart/form-data; boundary=B
                  | <ticket.upload_fields>=…
                  | <10320 bytes of voice.m4a>
                request (as visit): POST http://API/api/v1/visit-transcripts/audio/upload/complete/<ticket.visit_id>
                  Authorization: Bearer REDACTED
                  Accept: application/json
                  Content-Type: application/json
                  | {"file_size_bytes":10320,"duration_seconds":1.5,"device_metadata":{"uploader":"ingest","original_filename":"voice.m4a","codec":"aac","sample_rate":44100,"channels":1}}
            1 passed, 0 failed, 0 skipped

            """
        #expect(shown == expected)
        #expect(!(result.stdout + result.stderr).contains("vet-secret-jwt-1"))
        #expect(try backend.requests().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/.ingest/journal.sqlite"))
    }

    @Test("--dry-run needs no secrets: an unset ${VAR} renders as <unset VAR>")
    func dryRunWithoutVariables() throws {
        let folder = try vetFolder()
        defer { folder.remove() }
        var environment = environmentWithoutProxies()
        for name in ["HELPPET_API", "HELPPET_TOKEN", "PETS_MANIFEST"] { environment[name] = nil }
        let result = try runCommand(
            TestPaths.ingest, ["run", "--dry-run", TestPaths.root + "/pipelines/vet-audio.yml", "visits"],
            environment: environment, directory: folder.path)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("POST <unset HELPPET_API>/api/v1/visit-transcripts/audio/upload/initiate"))
        #expect(result.stdout.contains("Authorization: Bearer REDACTED"))
    }

    @Test("--dry-run of an S3 upload shows the key and the multipart plan, signed but redacted")
    func dryRunS3PartPlan() throws {
        let folder = try TemporaryFolder("dryrun-s3")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/big.bin", size: 12_000_000)
        try folder.file(
            "s3.yml",
            """
            version: 1
            name: s3-plan
            stages:
              - upload:
                  method: s3
                  endpoint: http://127.0.0.1:9
                  bucket: bucket-1
                  access_key_id: AKIDEXAMPLE
                  secret_access_key: ${SECRET}
                  key: "raw/{{file.name}}"
                  part_size: 5MiB
                  as: stored
            """)
        let result = try runCommand(
            TestPaths.ingest, ["run", "--dry-run", "s3.yml", "in"],
            environment: environmentWithoutProxies(["SECRET": "s3-secret-key-1", "AWS_REGION": "eu-north-1"]),
            directory: folder.path)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("upload (as stored): POST http://127.0.0.1:9/bucket-1/raw/big.bin?uploads\n"))
        #expect(result.stdout.contains("      key: raw/big.bin\n      bucket: bucket-1\n"))
        #expect(result.stdout.contains("parts: multipart, 3 parts of 5242880 bytes (last 1514240), 4 at once"))
        #expect(result.stdout.contains("Credential=AKIDEXAMPLE/"))
        #expect(result.stdout.contains("Signature=REDACTED"))
        #expect(!result.stdout.contains("s3-secret-key-1"))
    }

    @Test("ingest test: every shipped pipeline's tests pass (exit 0)")
    func shippedPipelineTestsPass() throws {
        let result = try runCommand(
            TestPaths.ingest, ["test", TestPaths.root + "/pipelines"], environment: environmentWithoutProxies())
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for name in [
            "hockey-video-signed-put", "hockey-video-analyze", "vehicle-photos", "vet-audio", "crowd-geotag",
            "preflight",
        ] {
            #expect(result.stdout.contains("pipelines/\(name).test.yml\n  ok  "), "no passing cases for \(name)")
        }
        #expect(!result.stdout.contains("FAIL"))
    }

    @Test("ingest test: a wrong expectation fails (exit 1) with a diff, and JUnit records it")
    func wrongExpectationFails() throws {
        let folder = try TemporaryFolder("pipeline-test")
        defer { folder.remove() }
        try folder.file(
            "signed.test.yml",
            """
            pipeline: \(TestPaths.root)/pipelines/hockey-video-signed-put.yml
            env:
              PUCKBUDDY_BACKEND: "https://backend.example.test/api"
              PUCKBUDDY_USER_ID: u1
              FIREBASE_PROJECT: p1
              FIREBASE_TOKEN: t1
            stubs:
              ticket:
                status: 200
                json: { upload_url: "https://storage.example.test/v.mov?X-Goog-Signature=s1", storage_path: u1/v.mov }
              analysis:
                json:
                  name: projects/p1/databases/(default)/documents/jobs/j1
                  fields:
                    status: { stringValue: completed }
                    result_urls:
                      mapValue:
                        fields:
                          parent_summary_url: { stringValue: "https://storage.example.test/p.txt" }
                          coach_summary_url: { stringValue: "https://storage.example.test/c.txt" }
            cases:
              - name: right
                input: \(TestPaths.root)/Samples/good/plain.mov
                expect: { status: passed }
              - name: wrong
                input: \(TestPaths.root)/Samples/good/plain.mov
                expect:
                  status: failed
                  requests:
                    - stage: ticket
                      url: https://backend.example.test/api/upload-link
                    - stage: stored
                      url: { contains: "X-Goog-Signature=s1" }
            """)
        let junit = folder.path + "/results.xml"
        let result = try runCommand(
            TestPaths.ingest, ["test", folder.path, "--junit", junit], environment: environmentWithoutProxies())
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("  ok    right\n  FAIL  wrong\n"))
        #expect(result.stdout.contains("status: expected failed / actual passed"))
        #expect(
            result.stdout.contains(
                """
                        requests[0].url: expected https://backend.example.test/api/upload-link
                                         actual   https://backend.example.test/api/upload-url
                """))
        // The signature is redacted before it is compared or shown: no test output carries it.
        #expect(result.stdout.contains("requests[1].url: expected containing X-Goog-Signature=s1"))
        #expect(result.stdout.contains("actual   https://storage.example.test/v.mov?X-Goog-Signature=REDACTED"))
        #expect(result.stdout.contains("2 case(s): 1 passed, 1 failed"))
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains("<testsuite name=\"signed.test.yml\" tests=\"2\" failures=\"1\""))
        #expect(xml.contains("<failure message=\"status: expected failed / actual passed\">"))
    }

    @Test("ingest test: a test file with a mistake is a usage error (exit 2) naming the line")
    func badTestFile() throws {
        let folder = try TemporaryFolder("pipeline-test")
        defer { folder.remove() }
        try folder.file(
            "x.test.yml",
            """
            pipeline: \(TestPaths.root)/pipelines/preflight.yml
            cases:
              - input: \(TestPaths.root)/Samples/good/photo.jpg
                expect: { outcome: passed }
            """)
        let result = try runCommand(TestPaths.ingest, ["test", folder.path], environment: environmentWithoutProxies())
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("x.test.yml:4:15: error: unknown key 'outcome'; known: status, rule"))
    }

    @Test(
        "ingest test: an expectation of the wrong shape is refused (exit 2) at its line and column, not skipped",
        arguments: [
            ("requests: 99999999999999999999", "4:25: error: expected a list of requests"),
            ("requests: [ GET ]", "4:27: error: expected a mapping of request fields"),
            ("requests: [ { headers: x } ]", "4:38: error: expected a mapping of header names to expected values"),
            ("status: [ passed ]", "4:23: error: expected a string, found a list"),
            ("report: 3", "4:23: error: expected a mapping of field names to expected values, found '3'"),
            ("facts: nope", "4:22: error: expected a mapping of field names to expected values, found 'nope'"),
        ])
    func malformedExpectation(_ expectation: String, _ message: String) throws {
        let folder = try TemporaryFolder("pipeline-test")
        defer { folder.remove() }
        try folder.file(
            "x.test.yml",
            """
            pipeline: \(TestPaths.root)/pipelines/preflight.yml
            cases:
              - input: \(TestPaths.root)/Samples/good/photo.jpg
                expect: { \(expectation) }
            """)
        let result = try runCommand(TestPaths.ingest, ["test", folder.path], environment: environmentWithoutProxies())
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("x.test.yml:\(message)"), "\(result.stderr)")
    }

    @Test("pipelines/test.schema.json accepts every shipped test file and refuses an unknown expectation")
    func testFileSchema() throws {
        let script = """
            import glob, json, sys, yaml, jsonschema
            schema = json.load(open(sys.argv[1] + "/test.schema.json"))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            for path in sorted(glob.glob(sys.argv[1] + "/*.test.yml")):
                errors = list(validator.iter_errors(yaml.safe_load(open(path))))
                print(path.split("/")[-1], "ok" if not errors else errors[0].message)
            bad = {"cases": [{"input": "x.mov", "expect": {"outcome": "passed"}}]}
            print("bad", "ok" if validator.is_valid(bad) else "refused")
            """
        let result = try runTool(TestVenv.python, ["-c", script, TestPaths.root + "/pipelines"])
        #expect(result.status == 0, "python3 with PyYAML and jsonschema is needed: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        // One line a shipped test file, and the refused one.
        let shipped = try FileManager.default.contentsOfDirectory(atPath: TestPaths.root + "/pipelines")
            .filter { $0.hasSuffix(".test.yml") }
        #expect(shipped.count >= 7 && lines.count == shipped.count + 1, "\(lines)")
        #expect(lines.dropLast().allSatisfy { $0.hasSuffix(".test.yml ok") }, "\(lines)")
        #expect(lines.last == "bad refused")
    }
}
