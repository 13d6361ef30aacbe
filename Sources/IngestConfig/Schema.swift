import Foundation
import IngestCore
import IngestStages
import IngestTemplates

// The top level of a pipeline file, declared with the same OptionField DSL as stage options: one declaration
// drives decoding, the README reference and `ingest schema`.

/// `version:` — the file format's version. Only 1 exists; a later ingest that changes the format bumps it.
struct FormatVersion: OptionValue, Sendable {
    static let supported = 1
    var value = FormatVersion.supported

    init() {}

    init(from node: ConfigNode) throws {
        let number = try Int(from: node)
        guard number == FormatVersion.supported else {
            throw node.error(
                "unsupported version \(number); this ingest reads version \(FormatVersion.supported) files")
        }
        value = number
    }

    package static var jsonSchema: JSONValue { ["type": "integer", "const": .int(Int64(supported))] }
}

/// `input:` — which files under the given paths the pipeline takes.
struct InputOptions: StageOptions, Sendable {
    var include: [String] = []
    var exclude: [String] = []
    var followSymlinks = false
    var maxDepth: Int?

    init() {}

    static var fields: [OptionField<InputOptions>] {
        [
            OptionField(
                "include", \.include,
                doc: "Globs matched against the path relative to the input root (`**/*.mov`); none means every file.",
                default: "[]"),
            OptionField("exclude", \.exclude, doc: "Globs that drop files (`**/.*`).", default: "[]"),
            OptionField(
                "follow_symlinks", \.followSymlinks, doc: "Follow symlinked folders and files.", default: "false"),
            OptionField(
                "max_depth", \.maxDepth, range: 0...4096,
                doc: "Folder levels below the root to descend (0: only the root's own files).",
                default: "no limit"),
        ]
    }

    var spec: InputSpec {
        var spec = InputSpec()
        spec.include = include
        spec.exclude = exclude
        spec.followSymlinks = followSymlinks
        spec.maxDepth = maxDepth
        return spec
    }
}

/// `stages:` — the steps in order. Every item is decoded (`StageEntry`) and kept, so one load reports every bad
/// stage, and what reads the stages after decoding (the template check, lint) reads these entries.
struct StageList: CollectingOptionValue, Sendable {
    var entries: [StageEntry] = []

    init() {}

    init(from node: ConfigNode, errors: inout [PipelineFileError]) {
        guard case .sequence(let items) = node.kind else {
            errors.append(node.error("expected a list of stages (`- validate: {…}`), found \(node.kindDescription)"))
            return
        }
        guard !items.isEmpty else {
            errors.append(node.error("a pipeline needs at least one stage"))
            return
        }
        entries = items.map(StageEntry.init(item:))
        errors += entries.flatMap(\.errors)
    }

    /// The stages that run: those that decoded and were not left out.
    var stages: [ConfiguredStage] { entries.filter { !$0.isLeftOut }.compactMap(\.configured) }

    package static var jsonSchema: JSONValue {
        ["type": "array", "minItems": 1, "items": ["$ref": "#/$defs/stage"]]
    }
}

extension OptionsLevel {
    /// The file's top level holds "keys", and every error under them is reported; a file that is not a mapping is
    /// told which keys it needs.
    static let fileTopLevel = OptionsLevel(
        noun: "key", nullIsEmpty: false, echoesUnknown: false, reportsEveryError: true
    ) { found, required in
        let expected = required.map { "'\($0)'" }.joined(separator: ", ")
        return "expected a mapping with \(expected), found \(found.isNull ? "an empty file" : found.kindDescription)"
    }
}

/// The whole file.
struct PipelineFileOptions: StageOptions, Sendable {
    var version = FormatVersion()
    var name = ""
    var input = InputOptions()
    var concurrency: Int?
    var dedupe: DedupeOptions?
    var maxWorkBytes: ByteSize?
    var onSuccess: OnSuccessOptions?
    var onFailure: OnFailureOptions?
    var settle: DurationValue?
    var bwlimit: BandwidthLimit?
    var stages = StageList()

    init() {}

    static var fields: [OptionField<PipelineFileOptions>] {
        [
            OptionField("version", \.version, doc: "Version of the file format; must be 1.", required: true),
            OptionField("name", \.name, doc: "Name of the pipeline, shown in reports.", required: true),
            OptionField("input", \.input, doc: "Which files to take from the paths given on the command line."),
            OptionField(
                "concurrency", \.concurrency, range: 1...Pipeline.maxConcurrency, doc: "Files worked on at once.",
                default: "number of cores"),
            OptionField(
                "dedupe", \.dedupe,
                doc:
                    "Skip a file whose key another file in the journal already holds (checked before any stage runs), "
                    + "naming that file.",
                default: "no deduplication"),
            OptionField(
                "max_work_bytes", \.maxWorkBytes,
                doc:
                    "Bound on the work folder: a file that transcodes reserves its size before it starts and waits "
                    + "while others hold the space; a file larger than the bound fails at once.",
                default: "no limit"),
            OptionField(
                "on_success", \.onSuccess,
                doc: "What becomes of a file once an upload delivered it and the journal has it as done (`ingest run`, "
                    + "`ingest watch`): `{move_to: DIR}` or `{delete: true}`.",
                default: "left where it is"),
            OptionField(
                "on_failure", \.onFailure,
                doc: "Where a failed file is moved under `ingest run` and `ingest watch`: `{move_to: DIR}`, its report "
                    + "beside it.",
                default: "left where it is"),
            OptionField(
                "settle", \.settle,
                doc:
                    "`ingest watch`: how long a file's size and modification time must stay the same before it is "
                    + "taken (`--settle` overrides it).",
                default: "5s"),
            OptionField(
                "bwlimit", \.bwlimit,
                doc:
                    "Cap on the bytes per second all uploads of the run send together (every worker, every method), "
                    + "in rclone's units: `8M` (8 MiB/s), `512k`, `off`, a bare number in KiB/s, or a timetable "
                    + "`\"08:00,512k 19:00,off\"`; `--bwlimit` overrides it.",
                default: "off"),
            OptionField(
                "stages", \.stages, doc: "The steps every file goes through, in order; each is `- name: {options}`.",
                required: true),
        ]
    }

    func validate(at node: ConfigNode) throws {
        if name.trimmingCharacters(in: .whitespaces).isEmpty { throw node.error("'name' must not be empty") }
        if let maxWorkBytes, maxWorkBytes.bytes < 1 { throw node.error("'max_work_bytes' must be at least 1 byte") }
        if let settle, settle.seconds > Pipeline.maxSettle {
            throw node.error("'settle' must be at most \(DurationValue(seconds: Pipeline.maxSettle)), found \(settle)")
        }
    }
}

extension Pipeline {
    /// JSON Schema (draft 2020-12) of the pipeline file, for editors and `ingest schema`. It is built from the
    /// same declarations that decode the file, so the two cannot drift. Wherever a number, boolean or word from a
    /// fixed set is expected, a `${VAR}` string is accepted too: interpolation happens before the value is typed.
    package static var jsonSchema: JSONValue {
        var schema: JSONObject = [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "ingest pipeline",
            "description": "A pipeline file for `ingest`: which files to take and the stages each goes through.",
        ]
        if case .object(let body) = PipelineFileOptions.jsonSchema {
            for (key, value) in body.pairs { schema[key] = value }
        }
        var stageProperties = JSONObject()
        for descriptor in StageRegistry.all { stageProperties[descriptor.name] = stageValueSchema(descriptor) }
        schema["$defs"] = [
            "envString": [
                "description":
                    "A value from the environment, read when the file is loaded (`${VAR}`, `${VAR:-default}`).",
                "type": "string",
                "pattern": "\\$\\{[A-Za-z_][A-Za-z0-9_]*(:?[-?][^}]*)?\\}",
            ],
            "stage": [
                "description": "One step: a mapping with one key, the stage name, whose value holds its options.",
                "type": "object",
                "minProperties": 1,
                "maxProperties": 1,
                "additionalProperties": false,
                "properties": .object(stageProperties),
            ],
        ]
        return allowingEnvironmentStrings(.object(schema))
    }

    /// A stage's options plus the common `as` and `when`; null (`- probe:`) is allowed when no option is required.
    static func stageValueSchema(_ descriptor: StageDescriptor) -> JSONValue {
        var options = JSONObject()
        if case .object(let declared) = descriptor.optionsSchema {
            options = declared
        }
        var properties = JSONObject()
        if case .object(let declared)? = options["properties"] { properties = declared }
        for field in CommonStageOptions.fields { properties[field.name] = field.schema }
        options["properties"] = .object(properties)
        if options["required"] != nil {
            var described: JSONObject = ["description": .string(descriptor.summary)]
            for (key, value) in options.pairs { described[key] = value }
            return .object(described)
        }
        return ["description": .string(descriptor.summary), "anyOf": [["type": "null"], .object(options)]]
    }

    /// Lets an `envString` stand wherever a typed scalar is expected: appended to an `anyOf` that offers one, or
    /// wrapped around a lone one (its description kept outside).
    static func allowingEnvironmentStrings(_ value: JSONValue) -> JSONValue {
        let environmentString: JSONValue = ["$ref": "#/$defs/envString"]
        func isTypedScalar(_ schema: JSONValue) -> Bool {
            guard case .object(let object) = schema, object["const"] == nil, case .string(let type)? = object["type"]
            else { return false }
            return ["integer", "number", "boolean"].contains(type) || (type == "string" && object["enum"] != nil)
        }
        guard case .object(let object) = value else {
            if case .array(let items) = value { return .array(items.map(allowingEnvironmentStrings)) }
            return value
        }
        var result = JSONObject()
        for (key, child) in object.pairs {
            if key == "anyOf", case .array(let alternatives) = child {
                var mapped = alternatives.map { isTypedScalar($0) ? $0 : allowingEnvironmentStrings($0) }
                if alternatives.contains(where: isTypedScalar) { mapped.append(environmentString) }
                result[key] = .array(mapped)
            } else {
                result[key] = allowingEnvironmentStrings(child)
            }
        }
        guard isTypedScalar(.object(result)) else { return .object(result) }
        var inner = result
        var outer = JSONObject()
        if let description = inner["description"] {
            outer["description"] = description
            inner["description"] = nil
        }
        outer["anyOf"] = [.object(inner), environmentString]
        return .object(outer)
    }
}
