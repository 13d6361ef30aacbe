import ArgumentParser
import Foundation
import IngestCheck
import IngestConfig
import IngestCore

struct LintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract:
            "Check pipeline files (and NAME.test.yml test files) without running them: errors (the file will not "
            + "load), warnings, and notes on how each template value in a URL is encoded.")

    @Argument(help: "Pipeline files to check; a NAME.test.yml is checked as a test file.")
    var pipelines: [String]

    @Flag(name: .long, help: "Treat warnings as errors (exit 2).")
    var strict = false

    @Flag(
        name: .customLong("strict-env"),
        help: "Treat an unset ${VAR} without a default as an error (exit 2), for CI where the variables are set.")
    var strictEnv = false

    func validate() throws {
        if pipelines.isEmpty { throw ValidationError("give at least one pipeline file") }
    }

    func run() throws {
        var failed = false
        for path in pipelines {
            let issues = Pipeline.lint(path: path, strictEnvironment: strictEnv, notes: true)
            for issue in issues { print(Redaction.text(issue.description)) }
            if issues.contains(where: { $0.severity == .error || (strict && $0.severity == .warning) }) {
                failed = true
            }
            if issues.allSatisfy({ $0.severity == .note }) { print("\(path): ok") }
        }
        throw failed ? ExitStatus.usage : ExitStatus.success
    }
}

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema of pipeline files (the same as pipelines/schema.json).")

    @Flag(name: .long, help: "Print the JSON Schema of test files (NAME.test.yml) instead: pipelines/test.schema.json.")
    var test = false

    func run() throws {
        print((test ? PipelineTestFile.jsonSchema : Pipeline.jsonSchema).prettySerialized())
    }
}
