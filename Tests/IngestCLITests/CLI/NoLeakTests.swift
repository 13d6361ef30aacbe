import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// No secret in any output (issue 12, "No leak"): real runs against the fixture backend handing out AWS, Google
/// Cloud Storage (v4 and v2) and Azure SAS signed URLs, seed 003's presigned POST (policy and signature) and a
/// Bearer token that the server quotes back in an error, with every output searched for the secret values: standard
/// output and error of `run`, `status` and `report`, the JSON Lines and JUnit reports of `run` and `report`. The
/// report files are mode 0600.
@Suite(.serialized) struct NoLeakTests {
    let ingest = TestPaths.ingest
    static let token = "leak-bearer-7f3a9c1e5d"

    /// Seed 001's ticket and PUT, both sending the Bearer token; `bob`'s PUT is refused by a server that quotes
    /// the signed URL and the Authorization header back.
    static func signedPutPipeline(_ base: String) -> String {
        """
        version: 1
        name: leak
        concurrency: 1
        stages:
          - request:
              url: \(base)/api/upload-url
              headers: { Authorization: "Bearer ${LEAK_TOKEN}" }
              json: { user_id: "{{dir.name}}", content_type: video/mov }
              backoff: 50ms
              as: ticket
          - upload:
              method: put
              url: "{{ticket.upload_info.upload_url}}"
              headers: { Authorization: "Bearer ${LEAK_TOKEN}" }
              content_type: video/mov
              backoff: 50ms
              as: stored

        """
    }

    /// Seed 003's initiate (Bearer) and presigned POST: the ticket's `upload_fields` hold a policy and a signature.
    static func postPipeline(_ base: String) -> String {
        """
        version: 1
        name: leak-post
        stages:
          - request:
              url: \(base)/api/v1/visit-transcripts/audio/upload/initiate
              headers: { Authorization: "Bearer ${LEAK_TOKEN}" }
              json: { pet_id: "{{dir.name}}", filename: "{{file.name}}", content_type: audio/m4a }
              backoff: 50ms
              as: ticket
          - upload: { method: s3-post, url: "{{ticket.upload_url}}", fields: "{{ticket.upload_fields}}", expect: [204] }

        """
    }

    /// Runs `ingest ARGUMENTS` in `folder`; returns its standard output and error, labelled for messages.
    func outputs(_ label: String, _ arguments: [String], in folder: TemporaryFolder) throws -> [(String, String)] {
        let result = try runCommand(
            ingest, arguments, environment: environmentWithoutProxies(["LEAK_TOKEN": Self.token]),
            directory: folder.path)
        return [("\(label) stdout", result.stdout), ("\(label) stderr", result.stderr)]
    }

    /// Every output of a run with a journal, a second run without one (JUnit), `status`, and `report` in each
    /// format; the report files are checked for mode 0600.
    func everyOutput(pipeline: String, in folder: TemporaryFolder) throws -> [(String, String)] {
        let file = try folder.file("pipeline.yml", pipeline)
        var all = try outputs("run", ["run", file, "in", "--report", "run.jsonl"], in: folder)
        all += try outputs("run --no-journal", ["run", file, "in", "--no-journal", "--report", "run.xml"], in: folder)
        all += try outputs("status", ["status"], in: folder)
        all += try outputs("report", ["report"], in: folder)
        all += try outputs("report jsonl", ["report", "--format", "jsonl"], in: folder)
        all += try outputs("report junit", ["report", "--output", "report.xml"], in: folder)
        for name in ["run.jsonl", "run.xml", "report.xml"] {
            let path = folder.path + "/" + name
            all.append((name, (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""))
            let mode = (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
            #expect(mode == 0o600, "\(name) has mode \(String(mode, radix: 8)), not 600")
        }
        return all
    }

    func expectNoSecret(_ outputs: [(String, String)], backend: FixtureBackend, style: String) throws {
        let secrets = ((try backend.state()["secrets"] as? [String]) ?? []) + [Self.token]
        #expect(secrets.count > 2, "the backend handed out no signatures (\(style))")
        for (label, text) in outputs {
            for secret in secrets where text.contains(secret) {
                Issue.record("\(style): \(label) shows the secret \(secret):\n\(text)")
            }
        }
    }

    @Test(arguments: ["aws", "gcs", "gcs-v2", "azure"])
    func signedURLsAndBearerTokenInNoOutput(style: String) throws {
        let faults = #"[{"method": "PUT", "path": "/signed/users/bob/", "action": "echo", "status": 403, "times": 50}]"#
        let backend = try FixtureBackend(faults: faults, urlStyle: style)
        let folder = try TemporaryFolder("leak-\(style)")
        defer { folder.remove() }
        _ = try writeRandomFile(folder.path + "/in/alice/one.mov", size: 70_000, seed: 1)
        _ = try writeRandomFile(folder.path + "/in/bob/two.mov", size: 50_000, seed: 2)
        let all = try everyOutput(pipeline: Self.signedPutPipeline(backend.base), in: folder)
        try expectNoSecret(all, backend: backend, style: style)
        // The bait was taken: alice's signed URL is in the report (redacted), bob's failure quotes the server.
        let report = all.first { $0.0 == "run.jsonl" }?.1 ?? ""
        #expect(report.contains("/signed/users/alice/") && report.contains("REDACTED"), "\(report)")
        #expect(report.contains("Access denied for PUT /signed/users/bob/"), "\(report)")
        #expect(try backend.objects().count == 2, "alice's file, once per run")
    }

    @Test func presignedPostPolicyAndSignatureInNoOutput() throws {
        let backend = try FixtureBackend(bearer: Self.token)
        let folder = try TemporaryFolder("leak-post")
        defer { folder.remove() }
        _ = try writeRandomFile(folder.path + "/in/pet-a/visit.m4a", size: 40_000, seed: 3)
        let all = try everyOutput(pipeline: Self.postPipeline(backend.base), in: folder)
        try expectNoSecret(all, backend: backend, style: "s3-post")
        let report = all.first { $0.0 == "run.jsonl" }?.1 ?? ""
        #expect(report.contains(#""upload_fields""#) && report.contains(#""policy":"REDACTED""#), "\(report)")
    }
}
