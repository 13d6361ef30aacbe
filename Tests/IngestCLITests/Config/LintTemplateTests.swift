import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// `ingest lint` through the CLI: it needs no secrets (an unset `${VAR}` is a warning naming it, an error with
/// `--strict-env`), and it checks every `{{…}}` against what the stages before it offer, as `validate` and `run`
/// do at load.
@Suite struct LintTemplateTests {
    let ingest = TestPaths.ingest
    static let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"

    /// Each shipped pipeline and the variables it needs that have no default.
    static let shipped: [(file: String, variables: [String])] = [
        ("crowd-geotag.yml", ["S3_ENDPOINT", "S3_BUCKET", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]),
        ("hockey-video-analyze.yml", ["PUCKBUDDY_API", "PUCKBUDDY_USER_ID"]),
        (
            "hockey-video-signed-put.yml",
            ["PUCKBUDDY_BACKEND", "PUCKBUDDY_USER_ID", "FIREBASE_PROJECT", "FIREBASE_TOKEN"]
        ),
        ("preflight.yml", []),
        ("vehicle-photos.yml", ["DISCERNER_API"]),
        ("vet-audio.yml", ["HELPPET_API", "HELPPET_TOKEN"]),
    ]

    static let values: [String: String] = [
        "S3_ENDPOINT": "https://s3.eu-west-1.amazonaws.com", "S3_BUCKET": "media-intake",
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret-example", "AWS_REGION": "eu-west-1",
        "PUCKBUDDY_API": "https://api.example.com", "PUCKBUDDY_USER_ID": "user-1",
        "PUCKBUDDY_BACKEND": "https://api.example.com/api", "DISCERNER_API": "https://discern.example.com",
        "HELPPET_API": "https://helppet.example.com", "HELPPET_TOKEN": "jwt-example",
        "FIREBASE_PROJECT": "puck-buddy", "FIREBASE_TOKEN": "firebase-id-token-example",
    ]

    func pipeline(_ file: String) -> String { TestPaths.root + "/pipelines/" + file }

    @Test func shippedPipelinesLintWithAnEmptyEnvironment() throws {
        for (file, variables) in Self.shipped {
            let result = try runCommand(ingest, ["lint", pipeline(file)], environment: ["PATH": Self.path])
            #expect(result.status == 0, "\(file): \(result.stdout)\(result.stderr)")
            #expect(!result.stdout.contains("error:"), "\(file): \(result.stdout)")
            for variable in variables {
                #expect(
                    result.stdout.contains("warning: environment variable '\(variable)' is not set"),
                    "\(file): \(result.stdout)")
            }
        }
    }

    @Test func strictEnvMakesUnsetVariablesErrors() throws {
        for (file, variables) in Self.shipped where !variables.isEmpty {
            let result = try runCommand(
                ingest, ["lint", "--strict-env", pipeline(file)], environment: ["PATH": Self.path])
            #expect(result.status == 2, "\(file): \(result.stdout)\(result.stderr)")
            for variable in variables {
                #expect(
                    result.stdout.contains("error: environment variable '\(variable)' is not set"),
                    "\(file): \(result.stdout)")
            }
        }
    }

    /// A variable the stage cannot be built without (a number) stays an error; a URL's is a warning.
    @Test func aNumberNeededToLoadStaysAnError() throws {
        let folder = try TemporaryFolder("lint-number")
        defer { folder.remove() }
        let file = try folder.file(
            "n.yml",
            "version: 1\nname: n\nstages:\n  - request: { url: \"${API}/x\", max_attempts: \"${TRIES}\" }\n")
        let result = try runCommand(ingest, ["lint", file], environment: ["PATH": Self.path])
        #expect(result.status == 2, "\(result.stdout)")
        #expect(result.stdout.contains("\(file):4:21: warning: environment variable 'API' is not set"))
        #expect(result.stdout.contains("\(file):4:47: error: environment variable 'TRIES' is not set"))
    }

    @Test func shippedPipelinesLintCleanWithTheirVariablesSet() throws {
        for (file, _) in Self.shipped {
            var environment = Self.values
            environment["PATH"] = Self.path
            let result = try runCommand(ingest, ["lint", "--strict-env", pipeline(file)], environment: environment)
            #expect(result.status == 0, "\(file): \(result.stdout)\(result.stderr)")
            // Notes (how each URL value is encoded) aside, nothing to say.
            let said = result.stdout.split(separator: "\n").filter { !$0.contains(": note: ") }
            #expect(said == ["\(pipeline(file)): ok"], "\(file): \(result.stdout)")
        }
    }

    /// A misspelt variable in each namespace: refused by lint and by validate at load, at the `{{`, with the
    /// closest name offered there.
    @Test func typosInEveryNamespaceSayWhatIsOffered() throws {
        let folder = try TemporaryFolder("lint-typo")
        defer { folder.remove() }
        let cases: [(template: String, message: String)] = [
            ("{{file.nam}}", "{{file.nam}}: file offers name, stem, ext, size, path (did you mean 'file.name'?)"),
            (
                "x/{{probe.duraton}}",
                "{{probe.duraton}}: probe offers content, format, streams, location, width, height, orientation, "
                    + "date_time_original, has_gps, duration, size, format_name (did you mean 'probe.duration'?)"
            ),
            ("{{ dir.nme }}", "{{dir.nme}}: dir offers name (did you mean 'dir.name'?)"),
            ("{{date.yyyyMMd}}", "date offers yyyy, MM, dd, yyyyMMdd, HH, mm (did you mean 'date.yyyyMMdd'?)"),
            ("a-{{sha265}}", "{{sha265}}: no earlier stage offers 'sha265'"),
            ("{{geohsh}}.jpg", "(did you mean 'geohash'?)"),
            ("{{sha256.x}}", "{{sha256.x}}: sha256 is a single value without fields"),
            ("{{looked.id}}", "(did you mean 'lookup'?)"),
        ]
        for (index, item) in cases.enumerated() {
            let yaml = """
                version: 1
                name: typo
                stages:
                  - geohash: { on_missing: skip }
                  - lookup: { csv: "", key: "{{file.path}}", fallback: { id: "{{dir.name}}" } }
                  - upload: { method: local, dir: \(folder.path)/out, key: "\(item.template)" }

                """
            let file = try folder.file("p\(index).yml", yaml)
            // The `{{` of the key's template on line 6.
            let line = String(yaml.split(separator: "\n")[5])
            let open = line.range(of: "{{", range: line.range(of: "key: ")!.upperBound..<line.endIndex)!
            let column = line.distance(from: line.startIndex, to: open.lowerBound) + 1
            let lint = try runCommand(ingest, ["lint", file], environment: ["PATH": Self.path])
            #expect(lint.status == 2, "\(item.template): \(lint.stdout)")
            #expect(lint.stdout.contains("\(file):6:\(column): error: "), "\(item.template): \(lint.stdout)")
            #expect(lint.stdout.contains(item.message), "\(item.template): \(lint.stdout)")
            let validate = try runCommand(ingest, ["validate", file, folder.path], environment: ["PATH": Self.path])
            #expect(validate.status == 2, "\(item.template): \(validate.stderr)")
            #expect(validate.stderr.contains(item.message), "\(item.template): \(validate.stderr)")
        }
    }

    /// `{{ticket.x}}` reads a server's answer: any field is fine after the stage `as: ticket`, refused before it.
    @Test func answerNamesOnlyAfterTheirStage() throws {
        let folder = try TemporaryFolder("lint-ticket")
        defer { folder.remove() }
        let request = "  - request: { url: \"http://127.0.0.1:9/t\", json: { n: \"{{file.name}}\" }, as: ticket }\n"
        let upload = "  - upload: { method: put, url: \"{{ticket.upload_url}}\" }\n"
        let head = "version: 1\nname: ticket\nstages:\n"
        let early = try folder.file("early.yml", head + upload + request)
        let result = try runCommand(ingest, ["lint", early], environment: ["PATH": Self.path])
        #expect(result.status == 2)
        #expect(
            result.stdout.contains(
                "\(early):4:34: error: {{ticket.upload_url}} is used by upload before the stage with 'as: ticket' runs"
            ), "\(result.stdout)")
        let run = try runCommand(
            ingest, ["run", early, folder.path, "--no-journal"], environment: ["PATH": Self.path])
        #expect(run.status == 2 && run.stderr.contains("before the stage with 'as: ticket' runs"), "\(run.stderr)")

        // A stage's own offer (no `as:`) likewise: `{{geohash}}` only after the geohash stage.
        let geohash = try folder.file(
            "geohash.yml",
            head + "  - upload: { method: local, dir: out, key: \"{{geohash}}\" }\n  - geohash: { on_missing: skip }\n")
        let before = try runCommand(ingest, ["lint", geohash], environment: ["PATH": Self.path])
        #expect(before.status == 2)
        #expect(
            before.stdout.contains(
                "\(geohash):4:46: error: {{geohash}} is used by upload before the geohash stage runs"),
            "\(before.stdout)")

        let late = try folder.file("late.yml", head + request + upload)
        let good = try runCommand(ingest, ["lint", late], environment: ["PATH": Self.path])
        #expect(good.status == 0, "\(good.stdout)")
        #expect(
            good.stdout
                == "\(late):5:34: note: {{ticket.upload_url}} starts the URL (a whole URL, or its scheme and host): "
                + "kept as it is\n\(late): ok\n", "\(good.stdout)")
    }
}
