#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The small HTTP/1.x server behind `--metrics-addr`: one thread, `poll(2)` over the listening socket and every open
/// connection at once, so no client holds up another. Each connection must send its whole request head (request line
/// and headers, up to the blank line) within `Limits.headSeconds` of being accepted, and take its answer within
/// `Limits.answerSeconds`, or it is closed: a client sending a header line a second (slowloris) is cut off however
/// steadily it trickles. At most `Limits.connections` are kept open: one more closes the oldest, so a flood of slow
/// clients costs bounded memory and descriptors and a scrape still gets in. Every answer closes its connection.
///
/// Used by the one thread that calls `serve`; `deinit` closes the connections (the listener is its owner's).
package final class PollingHTTPServer {
    package struct Limits: Sendable {
        /// Seconds from accept to the head's blank line.
        package var headSeconds = 2.0
        /// Seconds to send the answer once the head is in.
        package var answerSeconds = 5.0
        /// Connections kept open at once.
        package var connections = 64
        /// Bytes of a request head; a longer one is closed unanswered.
        package var headBytes = 8192

        package init() {}
    }

    private let listener: ListeningSocket
    private let limits: Limits
    /// The answer (status line, headers, body) to a request head (up to and with its blank line).
    private let respond: (ArraySlice<UInt8>) -> [UInt8]
    /// Seconds on a monotonic clock (not the wall clock, which NTP may step): the deadlines are measured on it. Its
    /// owner's clock, so that a test drives them.
    private let now: () -> Double
    /// Open connections, oldest first.
    private var open: [HTTPConnection] = []
    /// While `accept` cannot take a connection (out of descriptors), the listener is left alone until then
    /// (monotonic seconds) instead of `poll` saying it is ready at once, again and again.
    private var listenAgainAt = 0.0

    package init(
        listener: ListeningSocket, limits: Limits = Limits(), now: @escaping () -> Double,
        respond: @escaping (ArraySlice<UInt8>) -> [UInt8]
    ) {
        self.now = now
        self.listener = listener
        self.limits = limits
        self.respond = respond
    }

    /// Connections open now (for tests).
    package var openCount: Int { open.count }

    /// Serves until `running` says false (it is asked at least every `pollMilliseconds`).
    package func serve(pollMilliseconds: Int32 = 200, while running: () -> Bool) {
        while running() {
            let now = now()
            open.removeAll { $0.deadline <= now }
            let listening = now >= listenAgainAt
            var waiting = [pollfd(fd: listener.descriptor, events: listening ? Int16(POLLIN) : 0, revents: 0)]
            for connection in open {
                let events = connection.answer == nil ? POLLIN : POLLOUT
                waiting.append(pollfd(fd: connection.descriptor, events: Int16(events), revents: 0))
            }
            let nearest = open.map(\.deadline).min().map { Int32(max(0, ($0 - now) * 1000).rounded(.up)) }
            let ready = poll(&waiting, nfds_t(waiting.count), min(pollMilliseconds, nearest ?? pollMilliseconds))
            guard ready > 0 else { continue }  // timed out, or EINTR
            // From the last, so closing one leaves the positions of those before it as they were.
            for index in stride(from: waiting.count - 1, through: 1, by: -1) where waiting[index].revents != 0 {
                if !step(open[index - 1], revents: waiting[index].revents) { open.remove(at: index - 1) }
            }
            if waiting[0].revents != 0 { acceptWaiting() }
        }
    }

    /// Accepts the connections waiting (up to a limit's worth, so those open are served between floods).
    private func acceptWaiting() {
        for _ in 0..<limits.connections {
            let descriptor: Int32
            switch listener.acceptNow() {
            case .connection(let accepted): descriptor = accepted
            case .none: return
            case .failed:
                listenAgainAt = now() + 0.1
                return
            }
            if open.count >= limits.connections {
                // The oldest still sending its head goes first: a slow client, not an answer being sent.
                open.remove(at: open.firstIndex { $0.answer == nil } ?? 0)
            }
            open.append(HTTPConnection(descriptor: descriptor, deadline: now() + limits.headSeconds))
        }
    }

    /// Reads from or writes to one connection that `poll` said is ready; false once it is to be closed.
    private func step(_ connection: HTTPConnection, revents: Int16) -> Bool {
        if connection.answer != nil { return connection.sendMore() }
        if revents & Int16(POLLIN) == 0 { return false }  // POLLHUP or POLLERR with nothing to read
        switch connection.readMore(limit: limits.headBytes) {
        case .waiting: return true
        case .closed: return false
        case .head(let head):
            connection.answer = respond(head)
            connection.deadline = now() + limits.answerSeconds
            return connection.sendMore()
        }
    }
}

/// One accepted connection (non-blocking): the head read so far, then the answer being sent. Closed on deinit.
final class HTTPConnection {
    let descriptor: Int32
    /// When it is closed unless done (monotonic seconds).
    var deadline: Double
    private var head: [UInt8] = []
    /// The answer, once the head is in; `sent` of its bytes are sent.
    var answer: [UInt8]?
    private var sent = 0

    enum Read {
        case waiting
        case head(ArraySlice<UInt8>)
        case closed
    }

    init(descriptor: Int32, deadline: Double) {
        self.descriptor = descriptor
        self.deadline = deadline
    }

    deinit { close(descriptor) }

    /// What is there to read: more of the head, the whole head, or the end (the peer closed, an error, or more
    /// than `limit` bytes without a blank line).
    func readMore(limit: Int) -> Read {
        var chunk = [UInt8](repeating: 0, count: max(1, min(4096, limit - head.count)))
        let got = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if got < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .waiting : .closed }
        guard got > 0 else { return .closed }
        let searchFrom = max(0, head.count - 3)
        head += chunk[0..<got]
        if let end = head[searchFrom...].firstRange(of: [13, 10, 13, 10]) { return .head(head[..<end.upperBound]) }
        return head.count >= limit ? .closed : .waiting
    }

    /// Sends what the socket takes of the answer; false once it is all sent (or the peer is gone): close it.
    func sendMore() -> Bool {
        guard let answer else { return false }
        while sent < answer.count {
            let count = answer.withUnsafeBytes { buffer in
                systemSend(descriptor, buffer.baseAddress! + sent, buffer.count - sent)
            }
            if count < 0 {
                if errno == EINTR { continue }
                return errno == EAGAIN || errno == EWOULDBLOCK
            }
            sent += count
        }
        return false
    }
}

/// `send(2)` without blocking or SIGPIPE, under a name the methods do not shadow.
private func systemSend(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        send(descriptor, bytes, count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    #else
        send(descriptor, bytes, count, Int32(MSG_DONTWAIT))
    #endif
}
