import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// moto's S3 server (`pip install 'moto[server]'`) on 127.0.0.1 with a free port, for the one behaviour SeaweedFS
/// does not have: a store that accepts `x-amz-checksum-*` headers without verifying or returning them (and any
/// signature). Killed when the value is released.
final class MotoS3 {
    let endpoint: String
    private let process: Process

    init() throws {
        let port = try runCommand(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])",
            ]
        ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [TestVenv.python, "-m", "moto.server", "-H", "127.0.0.1", "-p", port]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        endpoint = "http://127.0.0.1:\(port)"
        for _ in 0..<120 {
            let probe = try runCommand(
                "/usr/bin/env", ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", endpoint])
            if probe.stdout != "000" { return }
            guard process.isRunning else { break }
            usleep(250_000)
        }
        kill(process.processIdentifier, SIGKILL)
        throw SeaweedFS.Failure.request("moto's S3 server did not start on \(endpoint) (make test-deps)")
    }

    deinit {
        // moto's server does not stop on SIGTERM.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Creates a bucket (moto checks no signature).
    func createBucket(_ name: String) throws {
        let result = try runCommand("/usr/bin/env", ["curl", "-s", "-f", "-X", "PUT", "\(endpoint)/\(name)"])
        guard result.status == 0 else { throw SeaweedFS.Failure.request("moto: creating \(name) failed") }
    }
}
