import Foundation
import Testing

@testable import IngestCheck
@testable import IngestCore
@testable import IngestTestSupport

/// `.test.yml` files go through the one spec machinery of pipeline files: `TestFileSpec`'s fields decode them, and
/// pipelines/test.schema.json is written from the same fields.
@Suite struct TestFileSpecTests {
    static let schemaPath = TestPaths.root + "/pipelines/test.schema.json"

    /// `INGEST_UPDATE_SCHEMA=1 swift test --filter TestFileSpecTests` rewrites the file first (the same bytes as
    /// `ingest schema --test > pipelines/test.schema.json`).
    @Test func committedTestSchemaMatchesTheCode() throws {
        try expectCommittedSchema(PipelineTestFile.jsonSchema, at: Self.schemaPath, suite: "TestFileSpecTests")
    }

    @Test func ingestSchemaTestPrintsTheCommittedFile() throws {
        let result = try runCommand(TestPaths.ingest, ["schema", "--test"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == (try String(contentsOfFile: Self.schemaPath, encoding: .utf8)))
    }

    func keys(_ value: JSONValue?) -> [String] {
        if case .object(let object)? = value { return object.keys }
        return []
    }

    /// Every field of the spec is in the schema, with its doc; the required ones are required.
    @Test func schemaIsWrittenFromTheFields() throws {
        let schema = PipelineTestFile.jsonSchema
        #expect(schema["required"] == ["cases"])
        #expect(schema["additionalProperties"] == false)
        #expect(keys(schema["properties"]) == TestFileSpec.fields.map(\.name))
        let testCase = try #require(schema.lookup("properties.cases.items"))
        #expect(keys(testCase["properties"]) == TestCaseSpec.fields.map(\.name))
        #expect(testCase["required"] == ["input", "expect"])
        #expect(schema.lookup("properties.cases.minItems") == 1)
        let expect = try #require(testCase.lookup("properties.expect.properties"))
        #expect(keys(expect) == ExpectSpec.fields.map(\.name))
        #expect(expect.lookup("status.enum") == ["passed", "failed", "skipped"])
        let stub = try #require(schema.lookup("properties.stubs.additionalProperties.properties.status"))
        #expect(stub["minimum"] == 100 && stub["maximum"] == 599)
        #expect(stub["description"]?.stringValue?.hasPrefix("The HTTP status.") == true)
    }

    /// One load reports every mistake at the top level (each key, each case), each at its file:line:column.
    @Test func everyMistakeIsReportedWithItsLine() throws {
        let folder = try TemporaryFolder("test-file-spec")
        defer { folder.remove() }
        let fixture = try folder.file("in.jpg")
        let path = try folder.file(
            "x.test.yml",
            """
            pipline: x.yml
            stubs:
              ticket: { status: 700 }
            cases:
              - input: \(fixture)
                expect: { outcome: passed }
              - input: missing.jpg
                expect: { status: passed }
              - expect: { status: done }
              - input: \(fixture)
                path: ../escape.jpg
                expect: {}
            """)
        let errors: [PipelineFileError]
        do {
            _ = try PipelineTestFile.load(path: path)
            Issue.record("the file loaded")
            return
        } catch let thrown as PipelineFileErrors {
            errors = thrown.errors
        }
        let lines = errors.map { "\($0.location.map { "\($0.line):\($0.column)" } ?? "-") \($0.message)" }
        #expect(
            lines == [
                "1:1 unknown key 'pipline'; known: pipeline, env, stubs, cases",
                "3:21 status must be between 100 and 599, found '700'",
                "6:15 unknown key 'outcome'; known: status, rule, reason, requests, report, facts",
                "7:5 input \(folder.path)/missing.jpg does not exist",
                // A case reports its first mistake: the status, before the missing input.
                "9:23 'done' is not one of: passed, failed, skipped",
                "10:5 path must stay inside the run's folder, found '../escape.jpg'",
            ], "\(lines.joined(separator: "\n"))")
        #expect(errors.allSatisfy { $0.location?.file == path })
    }

    /// What the spec decodes is what `ingest test` runs: defaults, paths beside the test file, stubs merged.
    @Test func aTestFileDecodesThroughTheSpec() throws {
        let folder = try TemporaryFolder("test-file-spec")
        defer { folder.remove() }
        try folder.file("fixtures/a.mov")
        let path = try folder.file(
            "vet.test.yml",
            """
            env: { TOKEN: t }
            stubs:
              ticket: { status: 201, json: { id: 7, ok: true }, headers: { ETag: '"x"' } }
              stored: { status: 204 }
            cases:
              - input: fixtures/a.mov
                stubs: { stored: { status: 500 } }
                expect:
                  status: failed
                  requests: [ { stage: ticket, headers: { Authorization: { contains: Bearer } } } ]
                  facts: { ticket.id: 7 }
            """)
        let file = try PipelineTestFile.load(path: path)
        #expect(file.pipeline == folder.path + "/vet.yml")
        #expect(file.environment == ["TOKEN": "t"])
        let only = try #require(file.cases.first)
        #expect(only.name == "a.mov" && only.path == "a.mov" && only.input == folder.path + "/fixtures/a.mov")
        #expect(only.stubs["ticket"]?.status == 201 && only.stubs["ticket"]?.json == ["id": 7, "ok": true])
        #expect(only.stubs["ticket"]?.headers.first?.value == "\"x\"")
        #expect(only.stubs["stored"]?.status == 500)
        #expect(
            only.expect
                == [
                    "status": "failed",
                    "requests": [["stage": "ticket", "headers": ["Authorization": ["contains": "Bearer"]]]],
                    "facts": ["ticket.id": 7],
                ])
    }
}

/// A committed schema file holds what the code writes (pretty JSON and a newline, as `ingest schema` prints it);
/// `INGEST_UPDATE_SCHEMA=1 swift test --filter SUITE` rewrites it first.
func expectCommittedSchema(_ schema: JSONValue, at path: String, suite: String) throws {
    let expected = schema.prettySerialized() + "\n"
    if ProcessInfo.processInfo.environment["INGEST_UPDATE_SCHEMA"] == "1" {
        try expected.write(toFile: path, atomically: true, encoding: .utf8)
    }
    let committed = try String(contentsOfFile: path, encoding: .utf8)
    #expect(
        committed == expected,
        "\((path as NSString).lastPathComponent) is stale: run `INGEST_UPDATE_SCHEMA=1 swift test --filter \(suite)`")
}
