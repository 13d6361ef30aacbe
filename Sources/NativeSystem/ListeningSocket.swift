#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A socket call that failed, with the C library's text (`strerror`, or `gai_strerror` for an address).
package struct SocketError: Error, Sendable, CustomStringConvertible {
    package var description: String

    static func system(_ call: String, _ what: String, _ code: Int32) -> SocketError {
        SocketError(description: "\(call)(\(what)): \(String(cString: strerror(code)).lowercased())")
    }
}

/// A TCP socket bound and listening (one per server), non-blocking: `PollingHTTPServer` polls it beside its
/// connections and accepts what is waiting. Closed on deinit.
package final class ListeningSocket: Sendable {
    let descriptor: Int32
    /// `HOST:PORT` as bound (the port the kernel chose for port 0); IPv6 hosts in brackets.
    package let boundAddress: String

    /// Binds `host` (a numeric address or a name `getaddrinfo` resolves; its first answer) on `port`.
    package init(host: String, port: UInt16) throws(SocketError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw SocketError(description: "getaddrinfo(\(host)): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        let socketNumber = socket(
            first.pointee.ai_family, first.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue),
            first.pointee.ai_protocol)
        guard socketNumber >= 0 else { throw .system("socket", host, errno) }
        var yes: Int32 = 1
        setsockopt(socketNumber, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard bind(socketNumber, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let code = errno
            close(socketNumber)
            throw .system("bind", "\(host):\(port)", code)
        }
        guard listen(socketNumber, SOMAXCONN) == 0 else {
            let code = errno
            close(socketNumber)
            throw .system("listen", "\(host):\(port)", code)
        }
        descriptor = socketNumber
        boundAddress = ListeningSocket.name(of: socketNumber) ?? "\(host):\(port)"
    }

    deinit { close(descriptor) }

    /// What `acceptNow` found.
    enum Accepted {
        /// A connection (non-blocking, closed on exec).
        case connection(Int32)
        /// None is waiting.
        case none
        /// `accept4` failed with this errno (EMFILE: the process is out of descriptors): the connection waits.
        case failed(Int32)
    }

    /// A connection waiting to be accepted, if one is.
    func acceptNow() -> Accepted {
        while true {
            let connection = accept(descriptor, nil, nil)
            if connection >= 0 {
                // (accept4 is not in Swift's Glibc module.) A child process started meanwhile may inherit it for a
                // moment; reads and writes pass MSG_DONTWAIT in any case.
                _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                return .connection(connection)
            }
            // A connection reset before it was accepted is gone; another may be waiting behind it.
            if errno == EINTR || errno == ECONNABORTED { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .none : .failed(errno)
        }
    }

    /// `getsockname` as `HOST:PORT`.
    private static func name(of socketNumber: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getsockname(socketNumber, address, &length) == 0
                    && getnameinfo(
                        address, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                        NI_NUMERICHOST | NI_NUMERICSERV) == 0
            }
        }
        guard named else { return nil }
        let hostText = host.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let serviceText = service.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return (hostText.contains(":") ? "[\(hostText)]" : hostText) + ":" + serviceText
    }
}
