import Foundation

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
    let (status, stdout, stderr) = try runCommandForData(
        executable, arguments, environment: environment, directory: directory)
    return CommandResult(status: status, stdout: String(decoding: stdout, as: UTF8.self), stderr: stderr)
}

/// `runCommand` for tools whose standard output is bytes, not text (djpeg's images, exiftool's `-b`).
func runCommandForData(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil
) throws -> (status: Int32, stdout: Data, stderr: String) {
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
    let read = DispatchSemaphore(value: 0)
    let reader = Thread {
        errData = err.fileHandleForReading.readDataToEndOfFile()
        read.signal()
    }
    reader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    read.wait()
    return (process.terminationStatus, outData, String(decoding: errData, as: UTF8.self))
}

/// Runs a tool found on PATH (`ffmpeg`, `ffprobe` …).
func runTool(_ tool: String, _ arguments: [String]) throws -> CommandResult {
    try runCommand("/usr/bin/env", [tool] + arguments)
}
