import Foundation
import NativeCurl
import NativeSystem
import Testing

@testable import Ingest

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 32 §6: the metrics server's connection deadlines and the journal's wait for a lock whose holder is exiting
/// are measured on the clock they are given (the run's), so a test drives them instead of waiting them out.
@Suite struct DrivenDeadlineTests {
    /// A TCP connection to `address` (`HOST:PORT`) that reads with a `seconds` limit.
    final class Client {
        let descriptor: Int32

        init(_ address: String, readLimit seconds: Int) throws {
            let port = UInt16(address.split(separator: ":").last ?? "") ?? 0
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var limit = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            var peer = sockaddr_in()
            peer.sin_family = sa_family_t(AF_INET)
            peer.sin_port = port.bigEndian
            peer.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw SystemError(call: "connect", path: address, errno: errno) }
        }

        deinit { close(descriptor) }

        func send(_ text: String) {
            _ = Array(text.utf8).withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        }

        /// What one read returns: bytes, 0 for the end (the server closed), -1 for nothing within the limit.
        func read(waiting: Bool = true) -> (count: Int, text: String) {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let got = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, waiting ? 0 : Int32(MSG_DONTWAIT))
            }
            return (got, got > 0 ? String(decoding: buffer[0..<got], as: UTF8.self) : "")
        }
    }

    /// A client that never finishes its request head is cut off once the server's clock passes the head deadline —
    /// an hour here, which only a driven clock gets to within the test.
    @Test func theMetricsServersHeadDeadlineFiresOnItsClock() throws {
        let clock = ManualClock()
        var limits = PollingHTTPServer.Limits()
        limits.headSeconds = 3600
        let server = try MetricsServer(address: "127.0.0.1:0", metrics: RunMetrics(), clock: clock, limits: limits)
        defer { server.stop() }
        let slow = try Client(server.address, readLimit: 20)
        slow.send("GET /healthz HTTP/1.0\r\nX-Slow: 1\r\n")
        // A whole request on a second connection, answered: the server has accepted the first (accepted in order).
        let check = try Client(server.address, readLimit: 20)
        check.send("GET /healthz HTTP/1.0\r\n\r\n")
        #expect(check.read().text.hasPrefix("HTTP/1.0 200"))
        #expect(slow.read(waiting: false).count == -1, "closed before its deadline")
        clock.advance(by: 3601)
        #expect(slow.read().count == 0, "not cut off once the server's clock passed its head deadline")
    }

    /// A lock refused while its holder is gone (`/proc/locks` lists none: let go in between) is tried again every
    /// 50 ms for the grace, all of it on the caller's clock.
    @Test func theLockGraceIsWaitedOnTheCallersClock() throws {
        let folder = try TemporaryFolder("lock-grace-clock")
        defer { folder.remove() }
        let path = try folder.file("journal.sqlite.lock")
        let clock = ManualClock()
        var told: [Int32] = []
        var tries = 0
        #expect(throws: SystemError.self) {
            try ExitingLockHolder.take(
                path: path, grace: 5, now: { clock.now }, pause: { _ = clock.sleep($0, cancellation: nil) },
                waiting: { told.append($0) },
                lock: { () throws(SystemError) -> Int in
                    tries += 1
                    throw SystemError(call: "flock", path: path, errno: EWOULDBLOCK)
                })
        }
        #expect(told == [0])
        #expect(abs(clock.slept - 5) < 0.06, "waited \(clock.slept) s on the clock")
        #expect(tries >= 100)
    }
}
