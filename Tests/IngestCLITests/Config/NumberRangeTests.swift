import Foundation
import Testing

@testable import IngestTestSupport

/// Absurd numbers in a pipeline file or on the command line: each is refused with exit code 2 and a message that
/// names the option and what it accepts — never a trap (SIGILL), never a hang. Runs the real CLI.
@Suite struct NumberRangeTests {
    let ingest = TestPaths.ingest

    /// Huge, negative, not-a-number, infinite, overflowing, and with units that overflow once multiplied.
    static let absurd = [
        "99999999999999999999", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "-1", "-0.5",
        "1e300", "-1e300", "1e400", "nan", "inf", "-inf", ".nan", ".inf", "99999999999999999999h",
        "3600000000000000000000s", "9223372036854775s", "1e300s", "1e300B", "99999999999999999999TB", "-5MB",
    ]

    /// One option per line: where it is written, and what its error must say.
    struct Field {
        var yaml: String
        var expected: String
    }

    /// Every kind of number a pipeline file holds — counts, sizes, durations, percentages, rates, bit rates, frame
    /// rates, quality — at the top level and in stage options (network options included).
    static func fields(_ value: String) -> (header: [Field], stages: [Field]) {
        let url = "url: 'http://127.0.0.1:9/x'"
        let header = [
            Field(yaml: "concurrency: \(value)", expected: "concurrency must be between 1 and 1024"),
            Field(yaml: "input: {max_depth: \(value)}", expected: "max_depth must be between 0 and 4096"),
        ]
        let stages = [
            Field(yaml: "- validate: {max_bytes: \(value)}", expected: "max_bytes must be between 0 B and 1024 TiB"),
            Field(yaml: "- validate: {min_bytes: \(value)}", expected: "min_bytes must be between 0 B and 1024 TiB"),
            Field(yaml: "- validate: {duration: {min: \(value)}}", expected: "min must be between 0s and 366d"),
            Field(yaml: "- validate: {duration: {max: \(value)}}", expected: "max must be between 0s and 366d"),
            Field(yaml: "- validate: {max_width: \(value)}", expected: "max_width must be between 1 and 2147483647"),
            Field(yaml: "- validate: {max_pixels: \(value)}", expected: "max_pixels must be between 1 and 2147483647"),
            Field(yaml: "- jpeg: {quality: \(value)}", expected: "quality must be 0.01…1"),
            Field(yaml: "- jpeg: {min_savings: \(value)}", expected: "min_savings must be between 0% and 100%"),
            Field(yaml: "- jpeg: {max_dimension: \(value)}", expected: "max_dimension must be between 1 and 65535"),
            Field(yaml: "- jpeg: {max_bytes: \(value)}", expected: "max_bytes must be between 1 B and 2 GiB"),
            Field(yaml: "- video: {max_width: \(value)}", expected: "max_width must be between 16 and 16384"),
            Field(yaml: "- video: {crf: \(value)}", expected: "crf must be between 0 and 51"),
            Field(yaml: "- video: {max_fps: \(value)}", expected: "max_fps must be between 0.01 and 240"),
            Field(yaml: "- video: {bitrate: \(value)}", expected: "bitrate must be between 1 and 9999999999"),
            Field(yaml: "- audio: {bitrate: \(value)}", expected: "bitrate must be between 8k and 512k"),
            Field(yaml: "- audio: {channels: \(value)}", expected: "channels must be between 1 and 2"),
            Field(yaml: "- geohash: {precision: \(value)}", expected: "precision must be between 1 and 12"),
            Field(yaml: "- request: {\(url), timeout: \(value)}", expected: "timeout must be between 0.001s and 1d"),
            Field(
                yaml: "- request: {\(url), connect_timeout: \(value)}",
                expected: "connect_timeout must be between 0.001s and 1d"),
            Field(
                yaml: "- request: {\(url), stall_timeout: \(value)}",
                expected: "stall_timeout must be between 1s and 1d"),
            Field(
                yaml: "- request: {\(url), max_attempts: \(value)}", expected: "max_attempts must be between 1 and 100"),
            Field(
                yaml: "- request: {\(url), max_elapsed: \(value)}", expected: "max_elapsed must be between 0s and 366d"),
            Field(yaml: "- request: {\(url), backoff: \(value)}", expected: "backoff must be between 0s and 366d"),
            Field(yaml: "- request: {\(url), rate: \(value)}", expected: "rate must be between 1/day and 1000000/s"),
            Field(
                yaml: "- request: {\(url), min_speed: \(value)}", expected: "min_speed must be between 1 B and 1 GiB"),
            Field(
                yaml: "- request: {\(url), verify: {url: 'http://127.0.0.1:9/v', timeout: \(value)}}",
                expected: "timeout must be between 0.001s and 1d"),
            Field(
                yaml: "- upload: {method: put, \(url), timeout: \(value)}",
                expected: "timeout must be between 0.001s and 1d"),
        ]
        return (header, stages)
    }

    @Test(arguments: absurd)
    func pipelineNumbers(_ value: String) throws {
        let folder = try TemporaryFolder("numbers")
        defer { folder.remove() }
        let input = try folder.file("in/a.txt", "hello")
        let (header, stages) = Self.fields(value)
        // Line 1 `version`, 2 `name`, then the header fields, `stages:`, one stage per line.
        var lines = ["version: 1", "name: numbers"] + header.map(\.yaml) + ["stages:"]
        lines += stages.map { "  " + $0.yaml }
        let pipeline = try folder.file("p.yml", lines.joined(separator: "\n") + "\n")
        var expectations: [(line: Int, text: String)] = header.enumerated().map { ($0.offset + 3, $0.element.expected) }
        expectations += stages.enumerated().map { ($0.offset + header.count + 4, $0.element.expected) }

        for command in [["lint", pipeline], ["validate", pipeline, input]] {
            let result = try runCommand(ingest, command)
            #expect(result.status == 2, "\(command[0]) with \(value): status \(result.status)\n\(result.stderr)")
            // lint prints its findings on standard output, validate on standard error.
            let errors = (result.stdout + result.stderr).split(separator: "\n").map(String.init)
            for (line, text) in expectations {
                let error = errors.first { $0.hasPrefix("\(pipeline):\(line):") }
                #expect(
                    error?.contains(text) == true,
                    "\(command[0]) with \(value), line \(line): wanted '\(text)', got \(error ?? "no error")")
            }
        }
    }

    /// The values reported as crashes (SIGILL), each alone in a file the old checks accepted, run the way that
    /// trapped: at `validate` time, in `lint` itself, or when `run` built a request.
    static let reportedTraps: [(yaml: String, command: String, expected: String)] = [
        ("  - validate: {duration: {min: 99999999999999999999h}}", "validate", "min must be between 0s and 366d"),
        ("  - validate: {duration: {max: 3600000000000000000000s}}", "lint", "max must be between 0s and 366d"),
        (
            "  - request: {url: 'http://127.0.0.1:9/x', connect_timeout: 9223372036854775s}", "run",
            "connect_timeout must be between 0.001s and 1d"
        ),
        (
            "  - request: {url: 'http://127.0.0.1:9/x', stall_timeout: 99999999999999999999s}", "run",
            "stall_timeout must be between 1s and 1d"
        ),
    ]

    @Test(arguments: 0..<reportedTraps.count)
    func reportedTrapsAreRefusedAtLoad(_ index: Int) throws {
        let (yaml, command, expected) = Self.reportedTraps[index]
        let folder = try TemporaryFolder("traps")
        defer { folder.remove() }
        let pipeline = try folder.file("p.yml", "version: 1\nname: traps\nstages:\n\(yaml)\n")
        let arguments =
            command == "lint" ? ["lint", pipeline] : [command, pipeline, Samples.good("plain.mov"), "--no-journal"]
        let result = try runCommand(
            ingest, command == "validate" ? Array(arguments.dropLast()) : arguments, directory: folder.path)
        #expect(result.status == 2, "\(yaml): status \(result.status)\n\(result.stdout)\(result.stderr)")
        #expect((result.stdout + result.stderr).contains("\(pipeline):4:"), "\(result.stdout)\(result.stderr)")
        #expect((result.stdout + result.stderr).contains(expected), "\(result.stdout)\(result.stderr)")
    }

    /// Every number option of the command line, with the text its error must hold.
    static let options: [(arguments: [String], expected: String)] = [
        (["probe", "--timeout"], "--timeout must be a number of seconds between 0.001 and 86400"),
        (["probe", "--jobs"], "--jobs must be a whole number between 1 and 1024"),
        (["validate", "--probe-timeout"], "--probe-timeout must be a number of seconds between 0.001 and 86400"),
        (["validate", "--concurrency"], "--concurrency must be a whole number between 1 and 1024"),
        (["run", "--concurrency"], "--concurrency must be a whole number between 1 and 1024"),
        (["run", "--lease-seconds"], "--lease-seconds must be a number of seconds between 1 and 86400"),
    ]

    /// The command line takes bare numbers (`Int(text)` or `Double(text)`, no units): every value with a unit fails
    /// that one parse, so `1e300s` stands for the six others (`99999999999999999999h`, `3600000000000000000000s`,
    /// `9223372036854775s`, `1e300B`, `99999999999999999999TB`, `-5MB`), which stay in `pipelineNumbers` where units
    /// are parsed. Six options × six values fewer runs of `ingest`.
    static let commandLineValues =
        absurd.filter { ["nan", "inf", "-inf", ".nan", ".inf"].contains($0) || $0.last?.isLetter != true }
        + ["1e300s", "-0", "0", "86401", ""]

    @Test(arguments: commandLineValues)
    func commandLineNumbers(_ value: String) throws {
        let folder = try TemporaryFolder("cli-numbers")
        defer { folder.remove() }
        // A real movie that the stages probe, so a timeout that passed would be used (`nan` trapped there).
        let input = Samples.good("plain.mov")
        let pipeline = try folder.file("p.yml", "version: 1\nname: n\nstages:\n  - validate: {duration: {max: 1h}}\n")
        for (arguments, expected) in Self.options {
            let positional = arguments[0] == "probe" ? [input] : [pipeline, input]
            let command = [arguments[0]] + positional + [arguments[1], value]
            let result = try runCommand(ingest, command, directory: folder.path)
            #expect(result.status == 2, "\(command): status \(result.status)\n\(result.stderr)")
            #expect(result.stderr.contains(expected), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("'\(value)'"), "\(command): the value is not echoed: \(result.stderr)")
        }
    }

    /// `concurrency: 1024` over a handful of files makes a thread per file, not 1,024 (it ran 1,000,000 threads).
    @Test func concurrencyCeilingAndUnusedSlots() throws {
        let folder = try TemporaryFolder("slots")
        defer { folder.remove() }
        for index in 0..<12 { try folder.file("in/\(index).txt", "hello") }
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: n\nconcurrency: 1024\nstages:\n  - validate: {extensions: [txt]}\n")
        let result = try runCommand(ingest, ["validate", pipeline, folder.path + "/in"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasSuffix("12 passed, 0 failed, 0 skipped\n"), "\(result.stdout)")
        let over = try runCommand(ingest, ["validate", pipeline, folder.path + "/in", "--concurrency", "1025"])
        #expect(over.status == 2)
    }

    /// A huge value (issue 12: a 20 MB scalar gave a 20 MB line) in an error is cut to a few hundred characters, with
    /// its length said. 100,000 characters, 500 times the cut: a million cost 20 s of CPU in the debug build for the
    /// same path (any value over 200 characters is cut).
    @Test func longValuesAreCutInErrors() throws {
        let folder = try TemporaryFolder("long")
        defer { folder.remove() }
        let long = String(repeating: "9", count: 100_000)
        let pipeline = try folder.file(
            "p.yml",
            "version: 1\nname: n\nconcurrency: \(long)\nstages:\n  - request: {url: 'http://127.0.0.1:9/', method: \(long)}\n"
                + "  - video: {preset: \(long)}\n")
        let result = try runCommand(ingest, ["lint", pipeline])
        #expect(result.status == 2)
        #expect(result.stdout.count < 2000, "\(result.stdout.count) characters of error")
        #expect(result.stdout.split(separator: "\n").count == 3)
        #expect(result.stdout.contains("(100000 characters)"))
        #expect(result.stdout.contains("concurrency must be between 1 and 1024"))
    }
}
