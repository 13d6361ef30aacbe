import Foundation
import IngestConfig
import IngestCore

/// A pipeline's test file (`pipelines/NAME.test.yml`), as `ingest test` reads it: input fixtures, the answers the
/// network stages get (stubs: nothing is sent), and what each file's run must give. See the README's `ingest test`.
package struct PipelineTestFile: Sendable {
    package struct Case: Sendable {
        package var name: String
        /// The fixture, as an absolute path (written relative to the test file).
        package var input: String
        /// The path the file has in the run (`<pet-uuid>/voice.m4a`): `{{file.path}}`, `{{dir.name}}` read it.
        package var path: String
        package var stubs: [String: Rehearsal.Stub]
        package var expect: JSONObject
    }

    package var path: String
    package var pipeline: String
    package var environment: [String: String]
    package var cases: [Case]

    /// Reads and checks the test file through its spec (`TestFileSpec`, the one decoder of pipeline files): throws
    /// a `PipelineFileError`, or `PipelineFileErrors` with every mistake, each naming its line.
    package static func load(path: String) throws -> PipelineTestFile {
        let yaml: String
        do {
            yaml = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw PipelineFileError(location: nil, message: "\(path): cannot read the test file")
        }
        let root = try ConfigLoader.compose(yaml: yaml, source: path, environment: [:]).root
        let spec = try TestFileSpec(from: root)
        let name = (path as NSString).lastPathComponent
        let stem = name.hasSuffix(".test.yml") ? String(name.dropLast(".test.yml".count)) : name
        let shared = spec.stubs.dictionary.mapValues(\.stub)
        return PipelineTestFile(
            path: path, pipeline: resolved(spec.pipeline ?? stem + ".yml", besides: path),
            environment: spec.env.dictionary,
            cases: spec.cases.cases.map { testCase($0, shared: shared, besides: path) })
    }

    static func testCase(_ spec: TestCaseSpec, shared: [String: Rehearsal.Stub], besides path: String) -> Case {
        let input = resolved(spec.input, besides: path)
        let fileName = (input as NSString).lastPathComponent
        return Case(
            name: spec.name ?? fileName, input: input, path: spec.path ?? fileName,
            stubs: shared.merging(spec.stubs.dictionary.mapValues(\.stub)) { $1 }, expect: spec.expect.json)
    }

    /// A path as written in the test file at `file`: relative to that file's folder unless absolute.
    static func resolved(_ path: String, besides file: String) -> String {
        let folder = (file as NSString).deletingLastPathComponent
        return path.hasPrefix("/") ? path : (folder as NSString).appendingPathComponent(path)
    }

    /// JSON Schema (draft 2020-12) of a test file, for editors and `ingest schema --test`
    /// (pipelines/test.schema.json): written from the spec that decodes the files, so the two cannot drift.
    package static var jsonSchema: JSONValue {
        var schema: JSONObject = [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://github.com/ingest/ingest/pipelines/test.schema.json",
            "title": "ingest test file (NAME.test.yml)",
            "description":
                "Cases that `ingest test` runs through a pipeline: fixtures, stubbed server answers, expected outcomes.",
        ]
        if case .object(let body) = TestFileSpec.jsonSchema {
            for (key, value) in body.pairs { schema[key] = value }
        }
        return .object(schema)
    }
}
