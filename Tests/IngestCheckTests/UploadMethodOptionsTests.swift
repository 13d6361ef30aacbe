import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestStages
@testable import IngestTemplates
@testable import IngestTestSupport

/// Each upload method owns its options (`UploadMethod.Options`, in its folder): the `upload` stage reads `method:`
/// and hands the other keys to that method's spec, so an option of another method is refused from the specs —
/// naming the methods that take it, at the key's line and column — and the JSON Schema refuses it too.
@Suite struct UploadMethodOptionsTests {
    /// An upload stage with `options` (one per line, indented under `- upload:`), as a pipeline file.
    static func pipeline(_ options: [String]) -> String {
        "version: 1\nname: t\nstages:\n  - upload:\n" + options.map { "      \($0)\n" }.joined()
    }

    /// The least each method needs, and an option of another method given to it with the methods that take it.
    static let cases: [(method: [String], foreign: String, takers: String)] = [
        (["method: put", "url: https://x.test/a"], "dir: out", "only method local takes it"),
        (["method: put", "url: https://x.test/a"], "key: a.bin", "only methods local and s3 take it"),
        (["method: put", "url: https://x.test/a"], "metadata: { a: b }", "only methods s3 and tus take it"),
        (
            ["method: s3-post", "url: https://x.test/a", "fields: { key: a }"], "chunk_size: 1MiB",
            "only method tus takes it"
        ),
        (["method: local", "dir: out"], "url: https://x.test/a", "only methods put, s3-post and tus take it"),
        (["method: local", "dir: out"], "headers: { X-A: b }", "only methods put, s3-post, s3 and tus take it"),
        (["method: local", "dir: out"], "max_attempts: 2", "only methods put, s3-post, s3 and tus take it"),
        (["method: s3", "bucket: media"], "url: https://x.test/a", "only methods put, s3-post and tus take it"),
        (["method: s3", "bucket: media"], "expect: [200]", "only methods put and s3-post take it"),
        (["method: tus", "url: https://x.test/a"], "bucket: media", "only method s3 takes it"),
        (["method: tus", "url: https://x.test/a"], "on_expired: fail", "only methods put and s3-post take it"),
    ]

    /// Each method's foreign option fails the load at the option's own key, naming the methods that take it.
    @Test func anOptionOfAnotherMethodNamesTheMethodsThatTakeIt() throws {
        for (method, foreign, takers) in Self.cases {
            let errors = pipelineErrors(Self.pipeline(method + [foreign]))
            let name = String(foreign.prefix { $0 != ":" })
            let chosen = method[0].dropFirst("method: ".count)
            #expect(errors.count == 1, "\(method) + \(foreign): \(errors)")
            #expect(
                errors.first?.message == "upload: '\(name)' is not used by method \(chosen); \(takers)",
                "\(method) + \(foreign): \(errors)")
            // The key's own place: line 4 + the method's lines + 1, column 7.
            #expect(
                errors.first?.location == SourceLocation(file: "test.yml", line: 5 + method.count, column: 7),
                "\(foreign): \(errors)")
        }
    }

    /// Every key one method declares and another does not is refused for that other, naming exactly the methods
    /// that declare it: the message comes from the specs, so a new method's keys are covered without a line here.
    @Test func everyForeignKeyOfEveryMethodIsRefusedFromTheSpecs() {
        let methods = UploadMethods.all
        for variant in methods.all {
            for other in methods.all where other.tag != variant.tag {
                for name in other.fieldNames where !variant.fieldNames.contains(name) {
                    let node = ConfigNode(
                        .mapping([
                            (Self.scalar("method"), Self.scalar(variant.tag)), (Self.scalar(name), Self.scalar("x")),
                        ]), at: SourceLocation(file: "t", line: 1, column: 1))
                    var errors: [PipelineFileError] = []
                    _ = UploadStage.Options(from: node, errors: &errors)
                    let takers = methods.all.filter { $0.fieldNames.contains(name) }.map(\.tag)
                    let said = errors.first?.message ?? ""
                    #expect(said.hasPrefix("'\(name)' is not used by method \(variant.tag); only"), "\(said)")
                    #expect(takers.allSatisfy { said.contains($0) }, "\(name) for \(variant.tag): \(said)")
                }
            }
        }
    }

    /// What a method requires is declared in its spec: missing, the load says which method needs it.
    @Test func aMissingRequiredOptionNamesTheMethod() {
        for (options, said) in [
            (["method: put"], "method put needs 'url'"),
            (["url: https://x.test/a", "method: s3-post"], "method s3-post needs 'fields'"),
            (["method: local", "key: a"], "method local needs 'dir'"),
            (["method: s3", "region: us-east-1"], "method s3 needs 'bucket'"),
            (["method: tus"], "method tus needs 'url'"),
        ] {
            let errors = pipelineErrors(Self.pipeline(options))
            #expect(errors.map(\.message) == ["upload: \(said)"], "\(options): \(errors)")
        }
        // No method and no options: the default method, put, needs its url.
        let bare = pipelineErrors("version: 1\nname: t\nstages:\n  - upload:\n")
        #expect(bare.map(\.message) == ["upload: method put needs 'url'"], "\(bare)")
    }

    /// A `method:` that is not a word is refused as such, not read as the default method (whose options the others
    /// then are not).
    @Test func aMethodThatIsNotAWordIsRefusedAsSuch() {
        for (method, found) in [("[local, s3]", "a list"), ("{ local: 1 }", "a mapping"), ("null", "null")] {
            let errors = pipelineErrors(Self.pipeline(["method: \(method)", "dir: out"]))
            #expect(errors.count == 1, "\(method): \(errors)")
            #expect(errors.first?.message.hasPrefix("upload: expected a string, found \(found)") == true, "\(errors)")
            #expect(errors.first?.location == SourceLocation(file: "test.yml", line: 5, column: 15), "\(errors)")
        }
        // A word with control characters in it is echoed escaped: the message stays one line, the terminal safe.
        let escaped = pipelineErrors(Self.pipeline([#"method: "local\nx\u001b[2J""#, "dir: out"]))
        let said = #"upload: 'local\nx\u{1B}[2J' is not one of: put"#
        #expect(escaped.first?.message.hasPrefix(said) == true, "\(escaped)")
    }

    /// Each method loads with its own options, and a method name that is none names the closest.
    @Test func eachMethodLoadsWithItsOwnOptions() throws {
        for options in [
            ["url: https://x.test/a", "expect: [200, 201]", "max_attempts: 2", "as: sent"],
            ["method: s3-post", "url: https://x.test/a", "fields: { key: a }", "on_expired: fail"],
            ["method: local", "dir: out", "key: \"{{file.name}}\"", "overwrite: false"],
            ["method: s3", "bucket: media", "metadata: { a: b }", "part_size: 16MiB", "timeout: 5m"],
            ["method: tus", "url: https://x.test/files", "metadata: { a: b }", "chunk_size: 1MiB"],
        ] {
            let errors = pipelineErrors(Self.pipeline(options))
            #expect(errors.isEmpty, "\(options): \(errors)")
        }
        let typo = pipelineErrors(Self.pipeline(["method: tuss", "url: https://x.test/a"]))
        #expect(typo.first?.message.contains("'tuss' is not one of: put, s3-post, local, s3, tus") == true)
        #expect(typo.first?.suggestion == "tus")
    }

    /// The JSON Schema says the same (per method, `if method … then` refuses the other methods' keys and requires
    /// the method's own), checked by Python's jsonschema; the keys stay listed for an editor's completion.
    @Test func theSchemaRefusesAnOptionOfAnotherMethod() throws {
        let folder = try TemporaryFolder("upload-schema")
        defer { folder.remove() }
        var documents: [(path: String, valid: Bool)] = []
        for (index, (method, foreign, _)) in Self.cases.enumerated() {
            let good = folder.path + "/good-\(index).yml"
            let bad = folder.path + "/bad-\(index).yml"
            try Self.pipeline(method).write(toFile: good, atomically: true, encoding: .utf8)
            try Self.pipeline(method + [foreign]).write(toFile: bad, atomically: true, encoding: .utf8)
            documents += [(good, true), (bad, false)]
        }
        let missing = folder.path + "/missing.yml"
        try Self.pipeline(["method: s3", "region: us-east-1"]).write(toFile: missing, atomically: true, encoding: .utf8)
        documents.append((missing, false))
        let results = try SchemaTests.validateWithPython(documents.map(\.path))
        for (path, valid) in documents {
            let result = results[path] ?? "not checked"
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            #expect((result == "ok") == valid, "\(path): \(result)\n\(text)")
        }
        let properties = try #require(Pipeline.jsonSchema.lookup("$defs.stage.properties.upload.anyOf.1.properties"))
        for name in ["method", "url", "dir", "bucket", "chunk_size", "fields", "max_attempts", "as"] {
            #expect(properties[name] != nil, "\(name) is offered for completion")
        }
    }

    static func scalar(_ text: String) -> ConfigNode {
        ConfigNode(.scalar(text, plain: true), at: SourceLocation(file: "t", line: 1, column: 1))
    }
}

/// A test-only upload method: what a new method writes (its type and `Options`), to show the rest follows from one
/// registry line (ARCHITECTURE.md, "Adding an upload method").
struct EchoUpload: UploadMethod {
    static let name = "echo"
    static let summary = "a test-only method"

    struct Options: StageOptions, Sendable {
        var target = ""
        var bucket: String?
        init() {}
        static var fields: [OptionField<Options>] {
            [
                OptionField("target", \.target, doc: "Where it goes.", required: true),
                OptionField("bucket", \.bucket, doc: "A bucket of its own."),
            ]
        }
    }

    let options: Options
    init(options: Options, stage: UploadStage.Options) { self.options = options }
    func upload(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome { .proceed }
}

@Suite struct NewUploadMethodTests {
    /// The registry with the test-only method's line added, as `UploadMethods.all` would be.
    let registry = OptionVariants(key: "method", UploadMethods.all.all + [.method(EchoUpload.self)])

    func decode(_ pairs: [(String, String)]) -> (UploadMethodMaker?, [PipelineFileError]) {
        let at = SourceLocation(file: "t", line: 1, column: 1)
        let node = ConfigNode(
            .mapping(
                pairs.map {
                    (ConfigNode(.scalar($0.0, plain: true), at: at), ConfigNode(.scalar($0.1, plain: true), at: at))
                }),
            at: at)
        var errors: [PipelineFileError] = []
        let (_, chosen) = registry.split(node, common: UploadStage.Options.fields.map(\.name), errors: &errors)
        guard errors.isEmpty, let chosen else { return (nil, errors) }
        return (chosen.variant.decode(chosen.node, &errors), errors)
    }

    @Test func aNewMethodIsItsOptionsAndOneRegistryLine() throws {
        let (made, errors) = decode([("method", "echo"), ("target", "here"), ("bucket", "b")])
        #expect(errors.isEmpty, "\(errors)")
        let method = try #require(try made?(UploadStage.Options()))
        #expect((method as? EchoUpload)?.options.target == "here")
        // Its key refused for the others, theirs for it, a shared name naming both: from the specs alone.
        #expect(
            decode([("method", "put"), ("url", "https://x.test"), ("target", "t")]).1.map(\.message) == [
                "'target' is not used by method put; only method echo takes it"
            ])
        #expect(
            decode([("method", "echo"), ("target", "t"), ("url", "https://x.test")]).1.map(\.message) == [
                "'url' is not used by method echo; only methods put, s3-post and tus take it"
            ])
        #expect(
            decode([("method", "tus"), ("url", "https://x.test"), ("bucket", "b")]).1.map(\.message) == [
                "'bucket' is not used by method tus; only methods s3 and echo take it"
            ])
        #expect(decode([("method", "echo")]).1.map(\.message) == ["method echo needs 'target'"])
        // Documented and in the schema.
        let doc = try #require(registry.mergedFieldDocs.first { $0.name == "target" })
        #expect(doc.doc == "echo: Where it goes.")
        #expect(registry.tagField(\UploadStage.Options.method).doc.contains("`echo` (a test-only method)"))
        let schema = registry.jsonSchema(common: [:])
        #expect(schema["allOf"]?.arrayCount == registry.all.count)
        #expect(schema.lookup("properties.target") != nil)
    }
}

extension JSONValue {
    fileprivate var arrayCount: Int? {
        if case .array(let items) = self { return items.count }
        return nil
    }
}
