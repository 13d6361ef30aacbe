import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// Issue #29 §5: an authentication failure names the environment variables its headers were written with, so the
/// operator knows which one to fix (not "the variable the pipeline reads").
@Suite(.serialized) struct CredentialHintTests {
    @Test func theVariablesAHeaderIsWrittenWithAreKnown() {
        #expect(Interpolation.variables(in: "Bearer ${HELPPET_TOKEN:?a token}") == ["HELPPET_TOKEN"])
        #expect(Interpolation.variables(in: "${A}-${B:-${C}}-$${D}-${A}") == ["A", "B", "C"])
        #expect(Interpolation.variables(in: "plain $HOME and {{ticket.token}}").isEmpty)
    }

    /// seed 003's initiate refuses the token with 401: the failure says which variable the Authorization header reads.
    @Test func aRefusedTokenNamesItsVariable() throws {
        let backend = try FixtureBackend(bearer: "right-token")
        defer { backend.stop() }
        let folder = try TemporaryFolder("credential-hint")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/rex/visit.m4a", size: 1000)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: hint
            stages:
              - request:
                  url: "${API}/api/v1/visit-transcripts/audio/upload/initiate"
                  headers: { Authorization: "Bearer ${HELPPET_TOKEN}", X-Client: "ingest" }
                  json: { pet_id: "{{dir.name}}", filename: "{{file.name}}", content_type: audio/mp4 }
                  as: ticket
            """)
        let result = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--no-journal"],
            environment: environmentWithoutProxies(["API": backend.base, "HELPPET_TOKEN": "stale-token-81"]),
            directory: folder.path)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("answered 401 Unauthorized"), "\(result.stdout)")
        #expect(result.stdout.contains("check HELPPET_TOKEN, which the Authorization header reads"), "\(result.stdout)")
        #expect(!(result.stdout + result.stderr).contains("stale-token-81"))
    }
}
