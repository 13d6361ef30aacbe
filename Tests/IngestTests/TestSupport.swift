import Foundation

/// A fresh folder under the temp directory, removed by `remove()`.
struct TemporaryFolder {
    let path: String

    init(_ label: String) throws {
        path = NSTemporaryDirectory() + "ingest-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `contents` at `relative` (folders made as needed) and returns the full path.
    @discardableResult
    func file(_ relative: String, _ contents: String = "x") throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    func folder(_ relative: String) throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: true)
        return full
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The result of running a command.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `executable` with `arguments`, capturing both streams (read concurrently so a full pipe never blocks it).
func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil
) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    nonisolated(unsafe) var errData = Data()
    let reader = Thread { errData = err.fileHandleForReading.readDataToEndOfFile() }
    reader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    while !reader.isFinished { usleep(1000) }
    return CommandResult(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// Runs a tool found on PATH (`ffmpeg`, `ffprobe` …).
func runTool(_ tool: String, _ arguments: [String]) throws -> CommandResult {
    try runCommand("/usr/bin/env", [tool] + arguments)
}

enum TestPaths {
    /// The package root.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The `ingest` executable `swift test` built next to the test bundle.
    static var ingest: String {
        let bundleDirectory = Bundle.allBundles.map(\.bundlePath).first { $0.hasSuffix(".xctest") }
            .map { ($0 as NSString).deletingLastPathComponent }
        let candidates =
            [bundleDirectory, (CommandLine.arguments.first as NSString?)?.deletingLastPathComponent]
            .compactMap { $0 }.map { $0 + "/ingest" } + [root + "/.build/debug/ingest"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates.last!
    }
}
