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

    /// The keys `expect:` may hold; anything else is a mistake in the test file.
    static let expectKeys: Set<String> = ["status", "rule", "reason", "requests", "report", "facts"]

    /// Reads and checks the test file; a `PipelineFileError` names the line of any mistake.
    package static func load(path: String) throws -> PipelineTestFile {
        let yaml: String
        do {
            yaml = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw PipelineFileError(location: nil, message: "\(path): cannot read the test file")
        }
        let root = try ConfigLoader.compose(yaml: yaml, source: path, environment: [:]).root
        guard case .mapping(let pairs) = root.kind else { throw root.error("expected a mapping (pipeline, cases)") }
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let stem = name.hasSuffix(".test.yml") ? String(name.dropLast(".test.yml".count)) : name
        var file = PipelineTestFile(
            path: path, pipeline: (folder as NSString).appendingPathComponent(stem + ".yml"), environment: [:],
            cases: [])
        var shared: [String: Rehearsal.Stub] = [:]
        var caseNodes: [ConfigNode] = []
        for (key, value) in pairs {
            switch key.scalar ?? "" {
            case "pipeline": file.pipeline = resolved(try text(value), in: folder)
            case "env":
                for (name, setting) in try mapping(value) { file.environment[try text(name)] = try text(setting) }
            case "stubs": shared = try stubs(value)
            case "cases":
                guard case .sequence(let items) = value.kind else { throw value.error("cases: expected a list") }
                caseNodes = items
            default:
                throw key.error(
                    "unknown key \(ConfigNode.echo(key.scalar ?? "")) (a test file has pipeline, env, stubs, cases)")
            }
        }
        if caseNodes.isEmpty { throw root.error("a test file needs at least one case under 'cases'") }
        file.cases = try caseNodes.map { try testCase($0, folder: folder, shared: shared) }
        return file
    }

    static func testCase(_ node: ConfigNode, folder: String, shared: [String: Rehearsal.Stub]) throws -> Case {
        var result = Case(name: "", input: "", path: "", stubs: shared, expect: JSONObject())
        var expectNode: ConfigNode?
        for (key, value) in try mapping(node) {
            switch key.scalar ?? "" {
            case "name": result.name = try text(value)
            case "input": result.input = resolved(try text(value), in: folder)
            case "path": result.path = try text(value)
            case "stubs": result.stubs.merge(try stubs(value)) { $1 }
            case "expect": expectNode = value
            default:
                throw key.error(
                    "unknown key \(ConfigNode.echo(key.scalar ?? "")) (a case has name, input, path, stubs, expect)")
            }
        }
        guard !result.input.isEmpty else { throw node.error("a case needs 'input' (a fixture file)") }
        guard FileManager.default.fileExists(atPath: result.input) else {
            throw node.error("input \(result.input) does not exist")
        }
        guard let expectNode, case .object(let expect) = json(expectNode) else {
            throw node.error("a case needs 'expect' (a mapping: status, rule, requests, report …)")
        }
        for key in expect.keys where !expectKeys.contains(key) {
            throw expectNode.error(
                "expect: unknown key '\(key)' (one of \(expectKeys.sorted().joined(separator: ", ")))")
        }
        if let problem = shapeProblem(of: expect) { throw expectNode.error("expect: \(problem)") }
        if let status = expect["status"]?.stringValue, ItemStatus(rawValue: status) == nil {
            throw expectNode.error("expect: status must be passed, failed or skipped, found '\(status)'")
        }
        if result.name.isEmpty { result.name = (result.input as NSString).lastPathComponent }
        if result.path.isEmpty { result.path = (result.input as NSString).lastPathComponent }
        if result.path.hasPrefix("/") || result.path.split(separator: "/").contains("..") {
            throw node.error("path must stay inside the run's folder, found '\(result.path)'")
        }
        result.expect = expect
        return result
    }

    /// An expectation of the wrong shape would be skipped by the comparison and the case would pass unchecked:
    /// it is refused instead. Nil when every key holds what `PipelineTestRun.compare` reads.
    static func shapeProblem(of expect: JSONObject) -> String? {
        for key in ["status", "rule"] where expect[key] != nil && expect[key]?.stringValue == nil {
            return "\(key) must be text"
        }
        if let requests = expect["requests"] {
            guard case .array(let list) = requests else { return "requests must be a list of requests" }
            for (index, request) in list.enumerated() {
                guard case .object(let fields) = request else { return "requests[\(index)] must be a mapping" }
                if let headers = fields["headers"], case .object = headers {
                } else if fields["headers"] != nil {
                    return "requests[\(index)].headers must be a mapping"
                }
            }
        }
        for key in ["report", "facts"] {
            if let value = expect[key], case .object = value {
            } else if expect[key] != nil {
                return "\(key) must be a mapping"
            }
        }
        return nil
    }

    static func stubs(_ node: ConfigNode) throws -> [String: Rehearsal.Stub] {
        var result: [String: Rehearsal.Stub] = [:]
        for (key, value) in try mapping(node) {
            var stub = Rehearsal.Stub()
            for (field, setting) in try mapping(value) {
                switch field.scalar ?? "" {
                case "status":
                    guard let status = Int(try text(setting)), (100...599).contains(status) else {
                        throw setting.error("stub status must be an HTTP status (100–599)")
                    }
                    stub.status = status
                case "json": stub.json = json(setting)
                case "headers":
                    stub.headers = try mapping(setting).map { (name: try text($0.0), value: try text($0.1)) }
                default:
                    throw field.error(
                        "unknown key \(ConfigNode.echo(field.scalar ?? "")) (a stub has status, json, headers)")
                }
            }
            result[try text(key)] = stub
        }
        return result
    }

    /// A path as written in the test file: relative to the test file's folder unless absolute.
    static func resolved(_ path: String, in folder: String) -> String {
        path.hasPrefix("/") ? path : (folder as NSString).appendingPathComponent(path)
    }

    static func mapping(_ node: ConfigNode) throws -> [(ConfigNode, ConfigNode)] {
        if node.isNull { return [] }
        guard case .mapping(let pairs) = node.kind else {
            throw node.error("expected a mapping, found \(node.kindDescription)")
        }
        return pairs.map { ($0.key, $0.value) }
    }

    static func text(_ node: ConfigNode) throws -> String {
        guard let text = node.scalar else { throw node.error("expected text, found \(node.kindDescription)") }
        return text
    }

    /// A node as JSON: plain scalars that read as numbers, booleans or null are those; quoted ones stay text.
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
