import Foundation
import Testing

@testable import IngestTestSupport

/// Names on the command line that do what a user expects: probe answers in argument order, one name for
/// parallelism, a misspelt command gets a suggestion.
@Suite struct CLINamesTests {
    let ingest = TestPaths.ingest
    let samples = TestPaths.root + "/Samples/good/"

    @Test func probePrintsInArgumentOrder() throws {
        let names = ["plain.mov", "located.mov", "graphic.png", "voice.m4a"]
        for json in [false, true] {
            let result = try runCommand(
                ingest, ["probe"] + (json ? ["--json"] : []) + names.map { samples + $0 }, directory: samples)
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            let printed = lines.map { line in names.first { line.contains(samples + $0) } ?? line }
            #expect(printed == names)
        }
    }

    @Test func probeTakesConcurrencyAndStillJobs() throws {
        for option in ["--concurrency", "--jobs"] {
            let result = try runCommand(ingest, ["probe", option, "2", samples + "plain.mov"])
            #expect(result.status == 0, "\(option): \(result.stderr)")
            #expect(result.stdout.hasPrefix(samples + "plain.mov: "))
        }
        let bad = try runCommand(ingest, ["probe", "--concurrency", "0", samples + "plain.mov"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--concurrency must be a whole number between 1 and 1024"), "\(bad.stderr)")
        let both = try runCommand(ingest, ["probe", "--concurrency", "2", "--jobs", "3", samples + "plain.mov"])
        #expect(both.status == 2)
        #expect(both.stderr.contains("--jobs is another name for --concurrency"), "\(both.stderr)")
        let help = try runCommand(ingest, ["probe", "--help"])
        #expect(help.stdout.contains("--concurrency <n>"))
        #expect(!help.stdout.contains("--jobs <n>"))
    }

    @Test func misspeltCommandGetsASuggestion() throws {
        for (word, meant) in [("valdate", "validate"), ("rnu", "run"), ("stauts", "status"), ("lnit", "lint")] {
            let result = try runCommand(ingest, [word, "pipelines/preflight.yml", "Samples/"])
            #expect(result.status == 2)
            #expect(
                result.stderr.hasPrefix("ingest: '\(word)' is not a command (did you mean '\(meant)'?)"),
                "\(result.stderr)")
        }
        let far = try runCommand(ingest, ["xyzzy"])
        #expect(far.status == 2)
        #expect(far.stderr.hasPrefix("ingest: 'xyzzy' is not a command\ncommands: run, validate, probe"))
    }

    @Test func wrongYAMLExtensionSaysSoOnce() throws {
        for command in ["validate", "run", "lint"] {
            let result = try runCommand(
                ingest, [command, "pipelines/preflight.yaml"] + (command == "lint" ? [] : ["Samples/good/"]),
                directory: TestPaths.root)
            #expect(result.status == 2)
            let lines = (result.stdout + result.stderr).split(separator: "\n")
            #expect(
                lines == [
                    "error: cannot read pipeline file pipelines/preflight.yaml: no such file or directory "
                        + "(did you mean 'pipelines/preflight.yml'?)"
                ], "\(command): \(lines)")
        }
    }
}
