import Foundation
import Testing

@testable import IngestTestSupport

/// Mistakes a user makes with files and paths get words that say what is wrong, through the real CLI.
@Suite struct ClearMessageTests {
    let ingest = TestPaths.ingest
    static let pipelineText = "version: 1\nname: words\nstages:\n  - validate: {extensions: [txt]}\n"

    /// Not UTF-8: the byte, its offset, line and column, in the form editors link ("The file isn't in the correct
    /// format" said none of it).
    @Test func pipelineFileNotUTF8() throws {
        let folder = try TemporaryFolder("utf8")
        defer { folder.remove() }
        let pipeline = folder.path + "/p.yml"
        let bytes = Array("version: 1\nname: caf".utf8) + [0xE9] + Array("\nstages:\n  - probe:\n".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: pipeline))
        for command in [["lint", pipeline], ["validate", pipeline, folder.path]] {
            let result = try runCommand(ingest, command)
            #expect(result.status == 2)
            #expect(
                (result.stdout + result.stderr).contains(
                    "\(pipeline):2:10: error: the file is not UTF-8 text: byte 0xE9 at offset 20 (line 2, column 10)"),
                "\(result.stdout)\(result.stderr)")
        }
    }

    /// A folder or a FIFO where the pipeline file goes is named as such, and a FIFO is never opened (it would
    /// block until a writer came).
    @Test func folderOrFIFOAsPipelineFile() throws {
        let folder = try TemporaryFolder("notfile")
        defer { folder.remove() }
        let fifo = folder.path + "/pipe.yml"
        #expect(mkfifo(fifo, 0o644) == 0)
        for (path, what) in [(folder.path, "a folder"), (fifo, "a FIFO (named pipe)")] {
            for command in [["lint", path], ["validate", path, folder.path]] {
                let result = try runCommand(ingest, command)
                #expect(result.status == 2)
                let output = result.stdout + result.stderr
                #expect(output.contains("\(path) is \(what), not a pipeline file"), "\(output)")
                #expect(!output.contains("NSCocoaErrorDomain") && !output.contains("permission"), "\(output)")
            }
        }
    }

    /// A symlink loop given as an input says so (it said "cannot open" with the bare errno text).
    @Test func symlinkLoopAsInput() throws {
        let folder = try TemporaryFolder("loop")
        defer { folder.remove() }
        let pipeline = try folder.file("p.yml", Self.pipelineText)
        let loop = folder.path + "/loop"
        try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: "loop")
        let result = try runCommand(ingest, ["validate", pipeline, loop])
        #expect(result.status == 1)
        #expect(result.stdout.contains("input.symlink_loop: symlink loop"), "\(result.stdout)")
    }

    /// A FIFO among the inputs is skipped with what it is, and counted as skipped, not failed (it was a FAIL whose
    /// message ended "skipped").
    @Test func fifoInputIsSkipped() throws {
        let folder = try TemporaryFolder("fifo")
        defer { folder.remove() }
        let pipeline = try folder.file("p.yml", Self.pipelineText)
        try folder.file("in/a.txt", "hello")
        #expect(mkfifo(folder.path + "/in/pipe.txt", 0o644) == 0)
        for paths in [[folder.path + "/in"], [folder.path + "/in/a.txt", folder.path + "/in/pipe.txt"]] {
            let result = try runCommand(ingest, ["validate", pipeline] + paths)
            #expect(result.status == 0, "\(result.stdout)")
            #expect(result.stdout.contains("skip  \(folder.path)/in/pipe.txt  not a regular file: a FIFO (named pipe)"))
            #expect(result.stdout.hasSuffix("1 passed, 0 failed, 1 skipped\n"), "\(result.stdout)")
        }
        let probe = try runCommand(ingest, ["probe", "--json", folder.path + "/in/pipe.txt"])
        #expect(probe.status == 0)
        #expect(probe.stdout.contains("\"skipped\":\"not a regular file: a FIFO (named pipe)\""), "\(probe.stdout)")
    }

    /// `--timeout -1` names the range (it said "Missing value": the -1 was taken for an option).
    @Test func negativeNumberOptionSaysTheRange() throws {
        let result = try runCommand(ingest, ["probe", "--timeout", "-1", "/dev/null"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--timeout must be a number of seconds between 0.001 and 86400, found '-1'"))
        #expect(!result.stderr.contains("Missing value"))
    }

    /// A malformed `${…}` in a network stage is a mistake whatever the environment: `validate` (which leaves
    /// network stages out) refuses it as `lint` does.
    @Test func malformedVariableInNetworkStage() throws {
        let folder = try TemporaryFolder("malformed")
        defer { folder.remove() }
        let pipeline = try folder.file(
            "p.yml",
            "version: 1\nname: m\nstages:\n  - validate: {extensions: [txt]}\n  - request:\n      url: '${API:1h-30m}'\n"
        )
        try folder.file("in/a.txt", "hello")
        var environment = ProcessInfo.processInfo.environment
        environment["API"] = nil
        for command in [["lint", pipeline], ["validate", pipeline, folder.path + "/in"]] {
            let result = try runCommand(ingest, command, environment: environment)
            #expect(result.status == 2, "\(command[0]): \(result.stdout)")
            #expect(
                (result.stdout + result.stderr).contains("\(pipeline):6:12: error: malformed variable reference"),
                "\(command[0]): \(result.stdout)\(result.stderr)")
        }
    }
}
