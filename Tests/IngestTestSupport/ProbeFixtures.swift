import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Paths of the committed samples (made by Samples/make-samples.sh).
enum Samples {
    static let root = URL(fileURLWithPath: TestPaths.root).appendingPathComponent("Samples")
    static func good(_ name: String) -> String { root.appendingPathComponent("good/\(name)").path }
    static func bad(_ name: String) -> String { root.appendingPathComponent("bad/\(name)").path }
    static func files(in folder: String) -> [String] {
        let directory = root.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0).path }
    }
}

/// The ffprobe CLI as an oracle: `ffprobe -v error -show_format -show_streams -of json`.
enum FFprobeOracle {
    /// The parsed JSON, or nil when ffprobe cannot read the file (exit status ≠ 0).
    static func probe(_ path: String) -> [String: Any]? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}

/// A TCP listener on 127.0.0.1 (plain POSIX sockets, a background thread) that counts accepted connections:
/// proof that a probe made no network connection.
final class ConnectionCounter: @unchecked Sendable {
    let port: UInt16
    private let socketFD: Int32
    private let lock = NSLock()
    private var accepted = 0
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        socketFD = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in run() }
        thread.start()
    }

    var connections: Int { lock.withLock { accepted } }

    private func run() {
        defer { finished.signal() }
        while !lock.withLock({ stopped }) {
            var descriptor = pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            let connection = accept(socketFD, nil, nil)
            if connection >= 0 {
                lock.withLock { accepted += 1 }
                close(connection)
            }
        }
    }

    /// Stops the thread and closes the socket; returns the number of connections accepted.
    func stop() -> Int {
        lock.withLock { stopped = true }
        finished.wait()
        close(socketFD)
        return connections
    }
}
