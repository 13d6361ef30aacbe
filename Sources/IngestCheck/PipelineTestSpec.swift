import Foundation
import IngestCore

// The test file's spec (`NAME.test.yml`), declared with the same OptionField DSL as pipeline files: the one
// decoder (`OptionsDecoder.swift`) reads a test file from these fields, and `ingest schema --test`
// (pipelines/test.schema.json) is written from them.

extension OptionsLevel {
    /// A test file's top level: every error under it is reported (one per key, one per case).
    static let testFileTopLevel = OptionsLevel(
        noun: "key", nullIsEmpty: false, echoesUnknown: true, reportsEveryError: true
    ) { found, required in
        let expected = required.map { "'\($0)'" }.joined(separator: ", ")
        return "expected a mapping with \(expected), found \(found.isNull ? "an empty file" : found.kindDescription)"
    }

    /// A mapping inside a test file (a case, its `expect`, a stub): its first error is reported.
    static let testFileMapping = OptionsLevel(
        noun: "key", nullIsEmpty: true, echoesUnknown: true, reportsEveryError: false
    ) { found, _ in
        "expected a mapping, found \(found.kindDescription)"
    }
}

/// The whole test file.
struct TestFileSpec: StageOptions, Sendable {
    var pipeline: String?
    var env = NamedValues<String>()
    var stubs = NamedValues<StubSpec>()
    var cases = TestCaseList()

    init() {}

    init(from node: ConfigNode, errors: inout [PipelineFileError]) {
        self.init(from: node, level: .testFileTopLevel, errors: &errors)
    }

    static var fields: [OptionField<TestFileSpec>] {
        [
            OptionField(
                "pipeline", \.pipeline, doc: "The pipeline file, relative to the test file.",
                default: "NAME.yml beside NAME.test.yml"),
            OptionField("env", \.env, doc: "Variables set for the test (the pipeline's `${VAR}`).", default: "none"),
            OptionField(
                "stubs", \.stubs,
                doc: "A network stage's answer, by its `as:` name (or `request`/`upload`), for every case.",
                default: "none"),
            OptionField("cases", \.cases, doc: "The files to run and what each run must give.", required: true),
        ]
    }
}

/// `cases:` — a list of at least one case; every case is decoded and each reports its first error.
struct TestCaseList: CollectingOptionValue, Sendable {
    var cases: [TestCaseSpec] = []
    /// Each case's node, for errors found after decoding (the pipeline it names).
    var nodes: [ConfigNode] = []

    init() {}

    init(from node: ConfigNode, errors: inout [PipelineFileError]) {
        guard case .sequence(let items) = node.kind else {
            errors.append(node.error("expected a list of cases, found \(node.kindDescription)"))
            return
        }
        guard !items.isEmpty else {
            errors.append(node.error("a test file needs at least one case under 'cases'"))
            return
        }
        for item in items {
            cases.append(TestCaseSpec(from: item, errors: &errors))
            nodes.append(item)
        }
    }

    static var jsonSchema: JSONValue {
        ["type": "array", "minItems": 1, "items": TestCaseSpec.jsonSchema]
    }
}

/// One case: a fixture, where it sits in the run, the answers its network stages get, and what must come out.
struct TestCaseSpec: StageOptions, Sendable {
    var name: String?
    var input = ""
    var path: String?
    var stubs = NamedValues<StubSpec>()
    var expect = ExpectSpec()

    init() {}

    init(from node: ConfigNode, errors: inout [PipelineFileError]) {
        self.init(from: node, level: .testFileMapping, errors: &errors)
    }

    static var fields: [OptionField<TestCaseSpec>] {
        [
            OptionField("name", \.name, doc: "What the case shows.", default: "the input's file name"),
            OptionField("input", \.input, doc: "A fixture file, relative to the test file.", required: true),
            OptionField(
                "path", \.path, doc: "The path the file has in the run (`{{file.path}}`, `{{dir.name}}` read it).",
                default: "the input's file name"),
            OptionField("stubs", \.stubs, doc: "This case's own answers, over the file's `stubs`.", default: "none"),
            OptionField("expect", \.expect, doc: "What the file's run must give.", required: true),
        ]
    }

    /// The fixture must exist and the path stay inside the run's folder.
    func validate(at node: ConfigNode) throws {
        let input = PipelineTestFile.resolved(input, besides: node.location.file)
        guard FileManager.default.fileExists(atPath: input) else { throw node.error("input \(input) does not exist") }
        if let path, path.hasPrefix("/") || path.split(separator: "/").contains("..") {
            throw node.error("path must stay inside the run's folder, found '\(path)'")
        }
    }
}

/// A stubbed answer: what the stage gets instead of the server's.
struct StubSpec: StageOptions, Sendable {
    var status: Int?
    var json: YAMLJSON?
    var headers = NamedValues<String>()

    init() {}

    init(from node: ConfigNode, errors: inout [PipelineFileError]) {
        self.init(from: node, level: .testFileMapping, errors: &errors)
    }

    static var fields: [OptionField<StubSpec>] {
        [
            OptionField(
                "status", \.status, range: 100...599, doc: "The HTTP status.", default: "200"),
            OptionField("json", \.json, doc: "The JSON body.", default: "no body"),
            OptionField("headers", \.headers, doc: "Response headers.", default: "none"),
        ]
    }

    var stub: Rehearsal.Stub {
        var stub = Rehearsal.Stub()
        if let status { stub.status = status }
        if let json { stub.json = json.value }
        stub.headers = headers.pairs.map { (name: $0.name, value: $0.value) }
        return stub
    }
}

/// What a case's run must give; each key is checked only when it is written.
struct ExpectSpec: StageOptions, Sendable {
    enum ExpectedStatus: String, OptionEnum, Sendable {
        case passed, failed, skipped
    }

    var status: ExpectedStatus?
    var rule: String?
    var reason: ExpectedValue?
    var requests: ExpectedRequests?
    var report: ExpectedFields?
    var facts: ExpectedFields?

    init() {}

    init(from node: ConfigNode, errors: inout [PipelineFileError]) {
        self.init(from: node, level: .testFileMapping, errors: &errors)
    }

    static var fields: [OptionField<ExpectSpec>] {
        [
            OptionField("status", \.status, doc: "The file's status."),
            OptionField("rule", \.rule, doc: "A rule the file broke: `stage.rule`, or just the rule."),
            OptionField("reason", \.reason, doc: "A skip's reason."),
            OptionField(
                "requests", \.requests,
                doc: "Every request, in order (`[]`: nothing sent); the fields named are compared.",
                default: "not checked"),
            OptionField("report", \.report, doc: "The fields a stage's `report:` recorded."),
            OptionField("facts", \.facts, doc: "Any fact of the JSON Lines report, by dotted path."),
        ]
    }

    /// The expectation as `PipelineTester.compare` reads it.
    var json: JSONObject {
        var object = JSONObject()
        if let status { object["status"] = .string(status.rawValue) }
        if let rule { object["rule"] = .string(rule) }
        if let reason { object["reason"] = reason.value }
        if let requests { object["requests"] = .array(requests.requests.map(JSONValue.object)) }
        for (key, map) in [("report", report), ("facts", facts)] {
            guard let map else { continue }
            object[key] = .object(map.fields)
        }
        return object
    }
}

/// `requests:` — a list of requests, each a mapping of fields to expected values; `headers` is a mapping of
/// header names to expected values.
struct ExpectedRequests: OptionValue, Sendable {
    var requests: [JSONObject] = []

    init(from node: ConfigNode) throws {
        guard case .sequence(let items) = node.kind else {
            throw node.error("expected a list of requests, found \(node.kindDescription)")
        }
        requests = try items.map { item in
            var fields = JSONObject()
            for pair in try item.mappingPairs(of: "request fields (stage, method, url, body, headers)") {
                let name = try String(from: pair.key)
                guard name == "headers" else {
                    fields[name] = try ExpectedValue(from: pair.value).value
                    continue
                }
                fields[name] = .object(try ExpectedFields(from: pair.value, what: "header names").fields)
            }
            return fields
        }
    }

    static var jsonSchema: JSONValue {
        [
            "type": "array",
            "items": [
                "type": "object",
                "properties": [
                    "stage": ["type": "string"],
                    "headers": ExpectedFields.jsonSchema,
                ],
                "additionalProperties": ExpectedValue.jsonSchema,
            ],
        ]
    }
}

/// A mapping of names (fields of the report, headers) to the values a case expects of them.
struct ExpectedFields: OptionValue, Sendable {
    var fields = JSONObject()

    init(from node: ConfigNode) throws { try self.init(from: node, what: "field names") }

    init(from node: ConfigNode, what: String) throws {
        for pair in try node.mappingPairs(of: "\(what) to expected values") {
            fields[try String(from: pair.key)] = try ExpectedValue(from: pair.value).value
        }
    }

    static var jsonSchema: JSONValue { ["type": "object", "additionalProperties": ExpectedValue.jsonSchema] }
}

/// A value a case expects: compared exactly (text as rendered), or as a substring with `{contains: text}`.
struct ExpectedValue: OptionValue, Sendable {
    var value: JSONValue

    init(from node: ConfigNode) throws {
        value = YAMLJSON.json(node)
        if case .object(let object) = value, object.keys == ["contains"], case .object? = object["contains"] {
            throw node.error("'contains' takes text to find, found a mapping")
        }
    }

    static var jsonSchema: JSONValue {
        [
            "description": "Compared exactly (text as rendered), or as a substring with {contains: text}.",
            "oneOf": [
                ["type": ["string", "number", "boolean", "null", "array"]],
                [
                    "type": "object", "additionalProperties": false, "required": ["contains"],
                    "properties": ["contains": ["type": ["string", "number"]]],
                ],
                ["type": "object", "not": ["required": ["contains"]]],
            ],
        ]
    }
}

/// Any YAML value, as JSON: plain scalars that read as numbers, booleans or null are those; quoted ones stay text.
struct YAMLJSON: OptionValue, Sendable {
    var value: JSONValue

    init(from node: ConfigNode) throws { value = Self.json(node) }

    static var jsonSchema: JSONValue { [:] }

    static func json(_ node: ConfigNode) -> JSONValue {
        switch node.kind {
        case .scalar(let text, let plain):
            if plain {
                if node.isNull { return .null }
                if text == "true" || text == "false" { return .bool(text == "true") }
                if let int = Int64(text) { return .int(int) }
                if let double = Double(text), double.isFinite { return .double(double) }
            }
            return .string(text)
        case .sequence(let items): return .array(items.map(json))
        case .mapping(let pairs):
            var object = JSONObject()
            for pair in pairs { object[pair.key.scalar ?? ""] = json(pair.value) }
            return .object(object)
        }
    }
}
