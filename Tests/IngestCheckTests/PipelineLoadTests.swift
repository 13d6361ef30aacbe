import Foundation
import Testing

@testable import IngestCheck
@testable import IngestConfig
@testable import IngestCore
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTestSupport

/// The errors `Pipeline.parse` throws for `yaml`, or an empty list when it loads.
func pipelineErrors(_ yaml: String, environment: [String: String] = [:]) -> [PipelineFileError] {
    do {
        _ = try Pipeline.parse(yaml: yaml, source: "test.yml", environment: environment)
        return []
    } catch let errors as PipelineFileErrors {
        return errors.errors
    } catch {
        return [PipelineFileError(location: nil, message: "unexpected error type: \(error)")]
    }
}

/// The options a loaded validate stage ended up with.
func validateOptions(_ stage: ConfiguredStage) throws -> ValidateStage.Options {
    try #require(stage.stage as? ValidateStage).options
}

@Suite struct PipelineInterpolationTests {
    let environment = ["API": "https://api.example.test", "EMPTY": "", "WORKERS": "3"]

    @Test func setVariableDefaultAndEscape() throws {
        #expect(
            try Interpolation.expand("${API}/upload", environment: environment) == "https://api.example.test/upload")
        #expect(try Interpolation.expand("${NOPE:-fallback}", environment: environment) == "fallback")
        #expect(try Interpolation.expand("${EMPTY:-fallback}", environment: environment) == "fallback")
        #expect(try Interpolation.expand("${EMPTY-fallback}", environment: environment) == "")
        #expect(try Interpolation.expand("${NOPE:-${WORKERS}}", environment: environment) == "3")
        #expect(try Interpolation.expand("price $$5 and $HOME", environment: environment) == "price $5 and $HOME")
        #expect(try Interpolation.expand("$${API}", environment: environment) == "${API}")
        #expect(
            try Interpolation.expand("{{ticket.url}}?k=${WORKERS}", environment: environment) == "{{ticket.url}}?k=3")
        #expect(try Interpolation.expand("${NOPE:-{{file.name}}}", environment: environment) == "{{file.name}}")
    }

    @Test func missingAndMalformedReferences() {
        #expect(throws: Interpolation.Failure.missing(name: "TOKEN", message: nil)) {
            try Interpolation.expand("Bearer ${TOKEN}", environment: environment)
        }
        #expect(throws: Interpolation.Failure.missing(name: "TOKEN", message: "set it from the vault")) {
            try Interpolation.expand("${TOKEN:?set it from the vault}", environment: environment)
        }
        #expect(throws: Interpolation.Failure.self) { try Interpolation.expand("${API", environment: environment) }
        #expect(throws: Interpolation.Failure.self) { try Interpolation.expand("${1X}", environment: environment) }
        #expect(throws: Interpolation.Failure.self) { try Interpolation.expand("${API+x}", environment: environment) }
    }

    @Test func valuesAreInterpolatedWhenTheFileLoads() throws {
        let yaml = """
            version: 1
            name: ${NAME:-nightly}
            concurrency: ${WORKERS}
            stages:
              - validate: { max_bytes: "${LIMIT:-5MB}", extensions: ["${EXT}"] }
            """
        let pipeline = try Pipeline.parse(
            yaml: yaml, source: "env.yml", environment: ["WORKERS": "3", "EXT": "m4a"])
        #expect(pipeline.name == "nightly")
        #expect(pipeline.concurrency == 3)
        let options = try validateOptions(try #require(pipeline.stages.first))
        #expect(options.maxBytes == ByteSize(bytes: 5_000_000))
        #expect(options.extensions == ["m4a"])
    }

    @Test func missingVariableNamesItAndItsPlace() {
        let yaml = """
            version: 1
            name: upload
            concurrency: ${WORKERS}
            stages:
              - validate: { max_bytes: "${LIMIT}" }
            """
        let errors = pipelineErrors(yaml)
        // One error per missing variable; the type errors the raw `${…}` text would cause are not repeated.
        #expect(
            errors.map(\.description) == [
                "test.yml:3:14: error: environment variable 'WORKERS' is not set "
                    + "(give a default with ${WORKERS:-value})",
                "test.yml:5:28: error: environment variable 'LIMIT' is not set (give a default with ${LIMIT:-value})",
            ])
    }

    /// `ingest validate` runs no network stage: the variables only those read are not needed (CI has no secrets),
    /// while `ingest run` still names every one before any file is read.
    @Test func variablesOnlyNetworkStagesReadAreNotNeededOffline() throws {
        let yaml = """
            version: 1
            name: offline
            stages:
              - validate: { extensions: [m4a] }
              - request:
                  url: ${API:?set API}/initiate
                  headers: { Authorization: "Bearer ${TOKEN:?set TOKEN}" }
                  as: ticket
              - upload:
                  method: s3
                  endpoint: ${S3_ENDPOINT:?set S3_ENDPOINT}
                  bucket: ${S3_BUCKET:?set S3_BUCKET}
                  access_key_id: AKIDEXAMPLE
                  secret_access_key: not-a-secret
              - probe:
            """
        // One error per variable: not also the s3 checks on the `${…}` text of the bucket name.
        let online = pipelineErrors(yaml)
        #expect(online.map { $0.location?.line } == [6, 7, 11, 12], "\(online)")
        #expect(online.allSatisfy { $0.message.contains("is not set") }, "\(online)")

        let offline = try Pipeline.parse(yaml: yaml, source: "test.yml", environment: [:], offline: true)
        // The request decodes with the `${…}` text in place (and is left out when run offline, as every network
        // stage is); the s3 upload cannot be built without an endpoint, so it is dropped from the pipeline.
        #expect(offline.stages.map(\.name) == ["validate", "request", "probe"])
        #expect(offline.stages.map(\.location.line) == [4, 5, 15])

        // Every variable set: the same stages as online.
        let environment = ["API": "http://a", "TOKEN": "t", "S3_ENDPOINT": "http://s3", "S3_BUCKET": "media"]
        let full = try Pipeline.parse(yaml: yaml, source: "test.yml", environment: environment, offline: true)
        #expect(full.stages.map(\.name) == ["validate", "request", "upload", "probe"])
    }

    @Test func offlineStillNeedsLocalVariablesAndReportsOtherErrors() {
        func offlineErrors(_ yaml: String) -> [String] {
            do {
                _ = try Pipeline.parse(yaml: yaml, source: "test.yml", environment: [:], offline: true)
                return []
            } catch let errors as PipelineFileErrors {
                return errors.errors.map(\.description)
            } catch {
                return ["\(error)"]
            }
        }
        // A local stage's variable is read by validate: still required.
        let local = """
            version: 1
            name: offline
            stages:
              - validate: { max_bytes: "${LIMIT:?set LIMIT}" }
              - request: { url: "${API:?set API}/x" }
            """
        #expect(
            offlineErrors(local) == [
                "test.yml:4:28: error: environment variable 'LIMIT' is not set: set LIMIT "
                    + "(give a default with ${LIMIT:-value})"
            ])
        // A typo in a network stage is still an error, though its variable is excused.
        let typo = """
            version: 1
            name: offline
            stages:
              - probe:
              - upload: { method: s3, endpoint: "${S3_ENDPOINT:?}", bucket: b, max_atempts: 3 }
            """
        let errors = offlineErrors(typo)
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.contains("unknown option 'max_atempts'") == true, "\(errors)")
        // A value shared by alias with a local stage is read by validate too.
        let shared = """
            version: 1
            name: offline
            stages:
              - request: { url: &api "${API:?set API}" }
              - lookup: { key: *api, fallback: { id: x } }
            """
        #expect(offlineErrors(shared).count == 1, "\(offlineErrors(shared))")  // said once for the two uses
        #expect(offlineErrors(shared).first?.contains("'API' is not set") == true)
    }

    @Test func keysAreNotInterpolated() {
        let yaml = """
            version: 1
            name: x
            ${KEY}: 1
            stages:
              - probe:
            """
        let errors = pipelineErrors(yaml, environment: ["KEY": "concurrency"])
        #expect(errors.count == 1)
        #expect(errors.first?.location == SourceLocation(file: "test.yml", line: 3, column: 1))
        #expect(errors.first?.message.contains("unknown key '${KEY}'") == true)
    }
}

@Suite struct PipelineErrorLocationTests {
    @Test func unknownTopLevelKey() throws {
        let errors = pipelineErrors("version: 1\nname: x\nconcurency: 2\nstages:\n  - probe:\n")
        let error = try #require(errors.first)
        #expect(errors.count == 1)
        #expect(error.location == SourceLocation(file: "test.yml", line: 3, column: 1))
        #expect(error.suggestion == "concurrency")
        #expect(error.description.hasPrefix("test.yml:3:1: error: unknown key 'concurency'"))
        #expect(error.description.hasSuffix("(did you mean 'concurrency'?)"))
    }

    @Test func unknownStageSuggestsTheClosest() throws {
        let errors = pipelineErrors("version: 1\nname: x\nstages:\n  - probe:\n  - valdiate: { max_bytes: 1MB }\n")
        let error = try #require(errors.first)
        #expect(errors.count == 1)
        #expect(error.location == SourceLocation(file: "test.yml", line: 5, column: 5))
        #expect(error.message.hasPrefix("unknown stage 'valdiate'"))
        #expect(error.suggestion == "validate")
    }

    @Test func unknownStageOptionSuggestsTheClosest() throws {
        let yaml = """
            version: 1
            name: x
            stages:
              - validate:
                  extensions: [mov]
                  max_byte: 100MB
            """
        let error = try #require(pipelineErrors(yaml).first)
        #expect(error.location == SourceLocation(file: "test.yml", line: 6, column: 7))
        #expect(error.message.hasPrefix("validate: unknown option 'max_byte'"))
        #expect(error.suggestion == "max_bytes")
    }

    @Test func wrongTypes() {
        let yaml = """
            version: 1
            name: x
            concurrency: many
            input: { follow_symlinks: maybe, max_depth: -1 }
            stages:
              - validate: { sniff: 3, max_width: wide }
              - geohash: { precision: [6] }
            """
        let errors = pipelineErrors(yaml)
        #expect(
            errors.map { "\($0.location?.line ?? 0):\($0.location?.column ?? 0)" } == ["3:14", "4:27", "6:24", "7:27"])
        #expect(errors[0].message == "expected a whole number, found 'many'; concurrency must be between 1 and 1024")
        #expect(errors[1].message == "expected true or false, found 'maybe'")
        #expect(errors[2].message == "validate: expected true or false, found '3'")
        #expect(errors[3].message == "geohash: expected a whole number, found a list")
    }

    @Test func boundsOnTopLevelNumbers() {
        let errors = pipelineErrors(
            "version: 1\nname: x\nconcurrency: 0\ninput: {max_depth: -1}\nstages:\n  - probe:\n")
        #expect(
            errors.map(\.description) == [
                "test.yml:3:14: error: concurrency must be between 1 and 1024, found '0'",
                "test.yml:4:20: error: max_depth must be between 0 and 4096, found '-1'",
            ])
    }

    @Test func stageItemWithTwoKeys() throws {
        // The classic indentation slip: options at the level of the stage name.
        let yaml = """
            version: 1
            name: x
            stages:
              - validate:
                max_bytes: 1MB
            """
        let error = try #require(pipelineErrors(yaml).first)
        #expect(error.location == SourceLocation(file: "test.yml", line: 5, column: 5))
        #expect(error.message.contains("exactly one key"))
        #expect(error.message.contains("'validate', 'max_bytes'"))
    }

    @Test func yamlSyntaxError() throws {
        let errors = pipelineErrors("version: 1\nname: x\nstages:\n  - validate: { max_bytes: 1MB\n  - probe:\n")
        let error = try #require(errors.first)
        #expect(errors.count == 1)
        #expect(error.message.hasPrefix("invalid YAML: "))
        #expect(error.location?.file == "test.yml")
        #expect(error.location?.line == 5)
        #expect(error.location?.column ?? 0 >= 1)
    }

    @Test func tabIndentationGetsAHint() throws {
        let error = try #require(pipelineErrors("version: 1\nname: x\nstages:\n\t- probe:\n").first)
        #expect(error.location == SourceLocation(file: "test.yml", line: 4, column: 1))
        #expect(error.message.hasSuffix("; YAML indents with spaces, not tabs"))
    }

    @Test func duplicateKeysAreRejected() throws {
        let error = try #require(pipelineErrors("version: 1\nname: x\nname: y\nstages:\n  - probe:\n").first)
        #expect(error.message == "key 'name' appears more than once in the same mapping")
        #expect(error.location == SourceLocation(file: "test.yml", line: 2, column: 1))
    }

    @Test func unsupportedVersion() throws {
        let errors = pipelineErrors("version: 2\nname: x\nstages:\n  - probe:\n")
        #expect(
            errors.map(\.description) == [
                "test.yml:1:10: error: unsupported version 2; this ingest reads version 1 files"
            ])
    }

    @Test func missingRequiredKeysAndEmptyStages() {
        #expect(
            pipelineErrors("name: x\nstages: []\n").map(\.description) == [
                "test.yml:1:1: error: missing required key 'version'",
                "test.yml:2:9: error: a pipeline needs at least one stage",
            ])
        #expect(
            pipelineErrors("").map(\.message) == [
                "expected a mapping with 'version', 'name', 'stages', found an empty file"
            ])
        #expect(pipelineErrors("- probe\n").first?.message.hasPrefix("expected a mapping") == true)
    }

    @Test func everyBadStageIsReportedInOnePass() {
        let yaml = """
            version: 1
            name: x
            stages:
              - valdiate:
              - probe
              - geohash: { precision: 20 }
              - validate: { duration: { min: 1h, max: 1m } }
              - probe: { as: 2fast }
            """
        let errors = pipelineErrors(yaml)
        #expect(errors.map { $0.location?.line ?? 0 } == [4, 5, 6, 7, 8])
        #expect(errors[1].message == "a stage is a mapping: write '- probe:' (with a colon)")
        #expect(errors[2].message == "geohash: precision must be between 1 and 12, found '20'")
        #expect(errors[3].message == "validate: duration.min (3600s) is greater than duration.max (60s)")
        #expect(errors[4].message.hasPrefix("'as' must be a name"))
    }
}

@Suite struct PipelineLoadTests {
    @Test func fullFileDecodes() throws {
        let yaml = """
            version: 1
            name: vet-audio
            input: { include: ["**/*.m4a"], exclude: "**/.*", follow_symlinks: true, max_depth: 2 }
            concurrency: 4
            stages:
              - validate: { extensions: [m4a], max_bytes: 100MB, duration: { min: 1s, max: 3600s }, as: checks }
              - probe:
              - geohash: { precision: 7, required: yes, as: cell }
            """
        let pipeline = try Pipeline.parse(yaml: yaml, source: "vet.yml", environment: [:])
        #expect(pipeline.version == 1)
        #expect(pipeline.name == "vet-audio")
        #expect(pipeline.source == "vet.yml")
        #expect(pipeline.input.include == ["**/*.m4a"])
        #expect(pipeline.input.exclude == ["**/.*"])
        #expect(pipeline.input.followSymlinks)
        #expect(pipeline.input.maxDepth == 2)
        #expect(pipeline.concurrency == 4)
        #expect(pipeline.stages.map(\.name) == ["validate", "probe", "geohash"])
        #expect(pipeline.stages.map(\.resultName) == ["checks", nil, "cell"])
        #expect(pipeline.stages.map(\.location.line) == [6, 7, 8])
        #expect(pipeline.stages.allSatisfy { !$0.usesNetwork })
        let validate = try validateOptions(pipeline.stages[0])
        #expect(validate.duration?.max == DurationValue(seconds: 3600))
        let geohash = try #require(pipeline.stages[2].stage as? GeohashStage)
        #expect(geohash.options.precision == 7)
        #expect(geohash.options.required)
    }

    @Test func defaults() throws {
        let pipeline = try Pipeline.parse(yaml: "version: 1\nname: x\nstages:\n  - probe:\n", environment: [:])
        #expect(pipeline.concurrency == ProcessInfo.processInfo.activeProcessorCount)
        #expect(pipeline.input.include.isEmpty)
        #expect(!pipeline.input.followSymlinks)
        #expect(pipeline.input.maxDepth == nil)
        #expect(pipeline.stages.first?.resultName == nil)
    }

    @Test func anchorsAndMergeKeys() throws {
        let yaml = """
            version: 1
            name: x
            limits: &limits { max_bytes: 10MB, sniff: false }
            stages:
              - validate: { <<: *limits, max_bytes: 20MB }
            """
        // `limits` is not a key of the format: it is reported, and the merge itself worked.
        #expect(pipelineErrors(yaml).map(\.message).first?.hasPrefix("unknown key 'limits'") == true)
        let merged = """
            version: 1
            name: x
            stages:
              - validate: &strict { max_bytes: 10MB, sniff: false }
              - validate: { <<: *strict, max_bytes: 20MB }
            """
        let pipeline = try Pipeline.parse(yaml: merged, environment: [:])
        let second = try validateOptions(pipeline.stages[1])
        #expect(second.maxBytes == ByteSize(bytes: 20_000_000))
        #expect(second.sniff == false)
    }

    @Test func aliasBombIsStopped() throws {
        var yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...9 {
            let previous = "*a\(level - 1)"
            yaml += "a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]\n"
        }
        let errors = pipelineErrors(yaml)
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("more than 100000 values") == true)
    }

    @Test func loadFromPathAndUnreadableFile() throws {
        let folder = try TemporaryFolder("pipeline")
        let directory = folder.url
        defer { folder.remove() }
        let path = directory.appendingPathComponent("p.yml").path
        try "version: 1\nname: from-disk\nstages:\n  - probe:\nconcurency: 1\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        #expect {
            _ = try Pipeline.load(path: path, environment: [:])
        } throws: { error in
            (error as? PipelineFileErrors)?.errors.first?.location == SourceLocation(file: path, line: 5, column: 1)
        }
        try "version: 1\nname: from-disk\nstages:\n  - probe:\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try Pipeline.load(path: path, environment: [:]).source == path)
        #expect {
            _ = try Pipeline.load(path: path + ".missing", environment: [:])
        } throws: { error in
            (error as? PipelineFileErrors)?.errors.first?.message.contains("cannot read pipeline file") == true
        }
    }
}

@Suite struct PipelineLintTests {
    @Test func validateWithoutRulesWarns() {
        let issues = Pipeline.lint(
            yaml: "version: 1\nname: x\nstages:\n  - validate:\n  - validate: { sniff: true }\n", source: "l.yml",
            environment: [:])
        #expect(issues.map(\.severity) == [.warning, .warning])
        #expect(issues.map { $0.location?.line ?? 0 } == [4, 5])
        #expect(issues.first?.description.hasPrefix("l.yml:4:5: warning: validate has no rules") == true)
    }

    @Test func resultNamesUsedTwiceOrTooEarly() {
        let yaml = """
            version: 1
            name: x
            stages:
              - validate: { containers: ["{{ facts.format }}"] }
              - probe: { as: facts }
              - probe: { as: facts }
            """
        // Reading a result before its stage runs is refused at load (it would be empty for every file).
        let issues = Pipeline.lint(yaml: yaml, source: "l.yml", environment: [:])
        #expect(issues.map(\.severity) == [.error])
        #expect(issues.first?.description.hasPrefix("l.yml:4:31: error: {{facts.format}} is used by validate") == true)
        #expect(issues[0].message.contains("before the stage with 'as: facts' runs"))
        let twice = yaml.replacingOccurrences(of: "containers: [\"{{ facts.format }}\"]", with: "max_bytes: 1MB")
        let warnings = Pipeline.lint(yaml: twice, source: "l.yml", environment: [:])
        #expect(warnings.map(\.severity) == [.warning])
        #expect(warnings.map { $0.location?.line ?? 0 } == [6])
        #expect(warnings[0].message.contains("also used by the probe stage at line 5"))
    }

    @Test func errorsComeBackAsErrors() {
        let issues = Pipeline.lint(
            yaml: "version: 1\nname: x\nstages:\n  - validat:\n", source: "l.yml", environment: [:])
        #expect(issues.count == 1)
        #expect(issues.first?.severity == .error)
        #expect(issues.first?.description.hasPrefix("l.yml:4:5: error: unknown stage 'validat'; known: ") == true)
        #expect(issues.first?.description.hasSuffix(" (did you mean 'validate'?)") == true)
    }

    @Test func aSensibleFileIsClean() {
        let yaml = "version: 1\nname: x\nstages:\n  - validate: { max_bytes: 1MB }\n  - probe: { as: facts }\n"
        #expect(Pipeline.lint(yaml: yaml, environment: [:]).isEmpty)
    }
}
