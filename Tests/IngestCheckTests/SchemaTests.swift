import Foundation
import Testing

@testable import IngestCheck
@testable import IngestConfig
@testable import IngestCore
@testable import IngestStages
@testable import IngestTestSupport

/// The committed JSON Schema matches the code, the committed pipelines satisfy it (checked by Python's
/// `jsonschema`, an independent validator), and the same pipelines load in Swift.
@Suite struct SchemaTests {
    static let root = URL(fileURLWithPath: TestPaths.root)
    static let schemaPath = root.appendingPathComponent("pipelines/schema.json").path

    /// An environment for a committed pipeline: every `${NAME}` it reads gets a plausible value (a URL for names
    /// that look like one), so the test follows new pipelines without a list to keep up to date.
    static func environment(for file: String) throws -> [String: String] {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: "\\$\\{([A-Za-z_][A-Za-z0-9_]*)(:?-)?")
        var environment: [String: String] = [:]
        let matches = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text))
        // A variable only ever given with a default (`${POLL_INTERVAL:-5s}`) is left unset: the default is what a
        // user gets, and a made-up value would not be a duration.
        let defaulted = { (match: NSTextCheckingResult) in match.range(at: 2).location != NSNotFound }
        for match in matches {
            guard let range = Range(match.range(at: 1), in: text) else { continue }
            let name = String(text[range])
            let occurrences = matches.filter { Range($0.range(at: 1), in: text).map { text[$0] } == text[range] }
            if occurrences.allSatisfy(defaulted) { continue }
            // An optional file (`${PETS_MANIFEST:-}`) is left unset: a made-up path would not open.
            if name.uppercased().hasSuffix("MANIFEST") { continue }
            // A variable with a default of its own (`${HELPPET_SETTLE:-60s}`) is left to it: it must be a duration.
            if text[range.upperBound...].hasPrefix(":-") && !text[range.upperBound...].hasPrefix(":-}") { continue }
            let looksLikeURL = ["API", "URL", "ENDPOINT", "HOST"].contains { name.uppercased().contains($0) }
            // '-' rather than '_': the values must pass as host and bucket names too.
            let word = name.lowercased().replacingOccurrences(of: "_", with: "-")
            environment[name] = looksLikeURL ? "https://\(word).example.test" : "test-\(word)"
        }
        return environment
    }

    static var pipelineFiles: [String] {
        let folder = root.appendingPathComponent("pipelines")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        // `NAME.test.yml` beside a pipeline is its `ingest test` file, not a pipeline.
        return names.filter { ($0.hasSuffix(".yml") || $0.hasSuffix(".yaml")) && !$0.hasSuffix(".test.yml") }.sorted()
            .map {
                folder.appendingPathComponent($0).path
            }
    }

    /// `INGEST_UPDATE_SCHEMA=1 swift test --filter SchemaTests` rewrites the file first (the same bytes as
    /// `ingest schema > pipelines/schema.json`).
    @Test func committedSchemaMatchesTheCode() throws {
        try expectCommittedSchema(Pipeline.jsonSchema, at: Self.schemaPath, suite: "SchemaTests")
    }

    @Test func schemaIsBuiltFromTheDeclarations() throws {
        let schema = Pipeline.jsonSchema
        #expect(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema")
        #expect(schema["required"] == ["version", "name", "stages"])
        #expect(schema["additionalProperties"] == false)
        let stageNames = try #require(schema.lookup("$defs.stage.properties")).objectKeys
        #expect(stageNames == StageRegistry.names)
        // A number may come from the environment.
        let concurrency = try #require(schema.lookup("properties.concurrency.anyOf"))
        #expect(concurrency == [["type": "integer", "minimum": 1, "maximum": 1024], ["$ref": "#/$defs/envString"]])
        #expect(schema.lookup("$defs.stage.properties.validate.anyOf.1.properties.as.pattern") != nil)
    }

    @Test func committedPipelinesSatisfyTheSchema() throws {
        let files = Self.pipelineFiles
        #expect(files.contains { $0.hasSuffix("/preflight.yml") })
        let results = try Self.validateWithPython(files)
        for file in files {
            #expect(results[file] == "ok", "\(file): \(results[file] ?? "not checked")")
        }
    }

    /// Without this, a schema that accepts everything would pass the test above.
    @Test func schemaRejectsBadFilesAndAcceptsEnvironmentStrings() throws {
        let folder = try TemporaryFolder("schema")
        let directory = folder.url
        defer { folder.remove() }
        let header = "version: 1\nname: t\n"
        let documents: [(name: String, yaml: String, valid: Bool)] = [
            ("good", header + "stages:\n  - validate: { max_bytes: 100MB, as: checks }\n  - probe:\n", true),
            (
                "env",
                header + "concurrency: ${WORKERS:-4}\nstages:\n  - validate:\n      max_bytes: ${MAX:-1MB}\n"
                    + "      sniff: ${SNIFF}\n  - geohash:\n      precision: ${PRECISION:-6}\n      required: yes\n",
                true
            ),
            ("unknown-stage", header + "stages:\n  - valdiate: {}\n", false),
            ("unknown-option", header + "stages:\n  - validate: { max_byte: 1MB }\n", false),
            ("two-keys", header + "stages:\n  - validate:\n    max_bytes: 1MB\n", false),
            ("bad-size", header + "stages:\n  - validate: { max_bytes: lots }\n", false),
            ("zero-workers", header + "concurrency: 0\nstages:\n  - probe:\n", false),
            ("version-2", "version: 2\nname: t\nstages:\n  - probe:\n", false),
            ("no-stages", header + "stages: []\n", false),
            ("bad-as", header + "stages:\n  - probe: { as: 2x }\n", false),
            ("unknown-top", header + "stage:\n  - probe:\n", false),
        ]
        var paths: [String: (valid: Bool, yaml: String)] = [:]
        for document in documents {
            let path = directory.appendingPathComponent("\(document.name).yml").path
            try document.yaml.write(toFile: path, atomically: true, encoding: .utf8)
            paths[path] = (document.valid, document.yaml)
        }
        let results = try Self.validateWithPython(paths.keys.sorted())
        for (path, expectation) in paths {
            let result = results[path] ?? "not checked"
            if expectation.valid {
                #expect(result == "ok", "\(path) should satisfy the schema: \(result)\n\(expectation.yaml)")
            } else {
                #expect(
                    result != "ok" && result != "not checked", "\(path) should break the schema\n\(expectation.yaml)")
            }
        }
        // The Swift loader agrees on the documents without variables.
        for document in documents where document.name != "env" {
            #expect(pipelineErrors(document.yaml).isEmpty == document.valid, "\(document.name)")
        }
    }

    @Test func committedPipelinesLoad() throws {
        for file in Self.pipelineFiles {
            let environment = try Self.environment(for: file)
            let pipeline = try Pipeline.load(path: file, environment: environment)
            #expect(!pipeline.stages.isEmpty)
            let errors = Pipeline.lint(path: file, environment: environment).filter { $0.severity == .error }
            #expect(errors.isEmpty, "\(errors)")
        }
    }

    @Test func preflightStaysOffline() throws {
        let file = Self.root.appendingPathComponent("pipelines/preflight.yml").path
        let pipeline = try Pipeline.load(path: file, environment: [:])
        #expect(pipeline.stages.map(\.name) == ["validate", "validate", "validate", "probe", "geohash"])
        #expect(pipeline.stages.allSatisfy { !$0.usesNetwork })
        #expect(Pipeline.lint(path: file, environment: [:]).isEmpty)
    }

    /// Validates each YAML file against `Pipeline.jsonSchema` (what `pipelines/schema.json` must hold) with PyYAML +
    /// jsonschema (draft 2020-12) and returns "ok" or the first schema error per file. The schema itself is checked
    /// against the metaschema first.
    static func validateWithPython(_ files: [String]) throws -> [String: String] {
        let folder = try TemporaryFolder("schema")
        defer { folder.remove() }
        let schemaPath = try folder.file("schema.json", Pipeline.jsonSchema.prettySerialized() + "\n")
        let script = """
            import json, sys, yaml, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            for path in sys.argv[2:]:
                errors = sorted(validator.iter_errors(yaml.safe_load(open(path))), key=lambda e: list(e.path))
                detail = "ok" if not errors else "/".join(map(str, errors[0].path)) + ": " + errors[0].message
                print(path + "\\t" + detail.replace("\\n", " "))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [TestVenv.python, "-c", script, schemaPath] + files
        let output = Pipe()
        let errorOutput = Pipe()
        process.standardOutput = output
        process.standardError = errorOutput
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errorOutput.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let stderr = String(decoding: errorData, as: UTF8.self)
        try #require(
            process.terminationStatus == 0,
            "python3 with PyYAML and jsonschema is needed (make test-deps): \(stderr)")
        var results: [String: String] = [:]
        for line in String(decoding: outputData, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1)
            if parts.count == 2 { results[String(parts[0])] = String(parts[1]) }
        }
        return results
    }
}

extension JSONValue {
    fileprivate var objectKeys: [String] {
        if case .object(let object) = self { return object.keys }
        return []
    }
}
