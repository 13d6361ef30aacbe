import Foundation
import IngestConfig
import IngestCore
import IngestRun
import NativeSystem

/// Runs a pipeline's test file: each case's fixture goes through the pipeline in a folder of its own, network stages
/// answered by the case's stubs (a `Rehearsal`: nothing is sent, no journal is kept), and what came out is compared
/// with what the case expects.
package enum PipelineTester {
    package struct CaseResult: Sendable {
        package var name: String
        /// One line per difference, `what: expected … / actual …`; empty when the case passed.
        package var mismatches: [String]
        package var seconds: Double
        package var passed: Bool { mismatches.isEmpty }
    }

    /// Runs every case. Throws `PipelineFileErrors` when the pipeline itself does not load.
    package static func run(_ file: PipelineTestFile) throws -> [CaseResult] {
        var environment = ProcessInfo.processInfo.environment
        environment.merge(file.environment) { $1 }
        // Stages that read the process environment themselves (AWS_REGION for S3) see the test's as well.
        let saved = file.environment.keys.map { ($0, ProcessInfo.processInfo.environment[$0]) }
        for (name, value) in file.environment { CurrentProcess.setEnvironment(name, to: value) }
        defer {
            for (name, value) in saved { CurrentProcess.setEnvironment(name, to: value) }
        }
        let pipeline = try Pipeline.load(path: file.pipeline, environment: environment)
        try pipeline.checkReadyToRun(offline: false)
        return try file.cases.map { try run($0, pipeline: pipeline, environment: environment) }
    }

    package static func run(_ testCase: PipelineTestFile.Case, pipeline: Pipeline, environment: [String: String]) throws
        -> CaseResult
    {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ingest-test-" + UUID().uuidString
        ).path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let inputs = scratch + "/in"
        let target = inputs + "/" + testCase.path
        try FileManager.default.createDirectory(
            atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: testCase.input, toPath: target)
        let rehearsal = Rehearsal(stubs: testCase.stubs)
        var settings = RunSettings(workDirectory: scratch + "/work", environment: environment)
        settings.rehearsal = rehearsal
        let started = settings.clock.now
        var single = pipeline
        single.concurrency = 1
        var reports: [(ItemReport, [RehearsedRequest])] = []
        try Runner(pipeline: single, settings: settings).run(paths: [inputs]) { report in
            reports.append((report, rehearsal.take(path: report.path)))
        }
        var mismatches: [String] = []
        if let (report, requests) = reports.first {
            mismatches = compare(testCase.expect, report: report, requests: requests)
        } else {
            mismatches = ["no file was run: the pipeline's input rules leave \(testCase.path) out"]
        }
        return CaseResult(
            name: testCase.name, mismatches: mismatches, seconds: settings.clock.now - started)
    }

    static func compare(_ expect: JSONObject, report: ItemReport, requests: [RehearsedRequest]) -> [String] {
        var out: [String] = []
        let failures = report.failures.map { "\($0.stage).\($0.rule)" }
        func check(_ what: String, _ expected: JSONValue, _ actual: JSONValue?) {
            if !matches(expected, actual) { out.append(difference(what, expected, actual)) }
        }
        if let status = expect["status"] {
            let why =
                failures.isEmpty ? report.skipReason.map { " (\($0))" } ?? "" : " (\(failures.joined(separator: ", ")))"
            if status.stringValue != report.status.rawValue {
                out.append("status: expected \(status.stringValue ?? "") / actual \(report.status.rawValue)\(why)")
            }
        }
        if let rule = expect["rule"]?.stringValue,
            !report.failures.contains(where: { $0.rule.rawValue == rule || "\($0.stage).\($0.rule)" == rule })
        {
            out.append(
                "rule: expected \(rule) / actual \(failures.isEmpty ? "no failure" : failures.joined(separator: ", "))")
        }
        if let reason = expect["reason"] { check("reason", reason, report.skipReason.map(JSONValue.string)) }
        if case .array(let wanted)? = expect["requests"] {
            if wanted.count != requests.count {
                out.append(
                    "requests: expected \(wanted.count) / actual \(requests.count) ("
                        + requests.map { "\($0.resultName ?? $0.stage) \($0.method) \($0.url)" }.joined(separator: "; ")
                        + ")")
            }
            for (index, (wantedRequest, request)) in zip(wanted, requests).enumerated() {
                guard case .object(let fields) = wantedRequest else { continue }
                let actual = request.json
                for (name, value) in fields.pairs {
                    if name == "headers", case .object(let headers) = value {
                        for (header, want) in headers.pairs {
                            let got = request.headers.first { $0.name.caseInsensitiveCompare(header) == .orderedSame }
                            check("requests[\(index)].headers.\(header)", want, got.map { .string($0.value) })
                        }
                    } else {
                        check("requests[\(index)].\(name)", value, actual[name])
                    }
                }
            }
        }
        for (section, root) in [("report", report.facts["report"]), ("facts", JSONValue.object(report.facts))] {
            guard case .object(let fields)? = expect[section] else { continue }
            for (name, value) in fields.pairs {
                check("\(section).\(name)", value, root.flatMap { JSONValue.object(["x": $0]).lookup("x.\(name)") })
            }
        }
        return out
    }

    /// Text compares exactly, `{contains: text}` as a substring, anything else as JSON.
    static func matches(_ expected: JSONValue, _ actual: JSONValue?) -> Bool {
        guard let actual else { return false }
        let actualText = actual.stringValue ?? actual.serialized()
        if case .object(let object) = expected, object.keys == ["contains"], let part = object["contains"] {
            return actualText.contains(part.stringValue ?? part.serialized())
        }
        if case .string(let text) = expected { return actualText == text }
        return expected.serialized() == actual.serialized()
    }

    static func difference(_ what: String, _ expected: JSONValue, _ actual: JSONValue?) -> String {
        let shown: String
        if case .object(let object) = expected, object.keys == ["contains"], let part = object["contains"] {
            shown = "containing \(part.stringValue ?? part.serialized())"
        } else {
            shown = expected.stringValue ?? expected.serialized()
        }
        let got = actual.map { $0.stringValue ?? $0.serialized() } ?? "(none)"
        let pad = String(repeating: " ", count: what.count)
        return "\(what): expected \(shown)\n\(pad)  actual   \(got)"
    }
}
