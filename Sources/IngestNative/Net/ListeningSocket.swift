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

/// A TCP socket bound and listening (one per server): `accept` waits with `poll`, so the serving thread can look
/// at a stop flag between connections. Closed on deinit.
package final class ListeningSocket: Sendable {
    private let descriptor: Int32
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
        let socketNumber = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard socketNumber >= 0 else { throw .system("socket", host, errno) }
        var yes: Int32 = 1
        setsockopt(socketNumber, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard bind(socketNumber, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let code = errno
            close(socketNumber)
            throw .system("bind", "\(host):\(port)", code)
        }
        guard listen(socketNumber, 16) == 0 else {
            let code = errno
            close(socketNumber)
            throw .system("listen", "\(host):\(port)", code)
        }
        descriptor = socketNumber
        boundAddress = ListeningSocket.name(of: socketNumber) ?? "\(host):\(port)"
    }

    deinit { close(descriptor) }

    /// The next connection, or nil when none came within `milliseconds`.
    package func accept(waitingAtMost milliseconds: Int32) throws(SocketError) -> ConnectedSocket? {
        var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&waiting, 1, milliseconds)
        if ready < 0 {
            if errno == EINTR { return nil }
            throw .system("poll", boundAddress, errno)
        }
        guard ready > 0 else { return nil }
        let connection = systemAccept(descriptor)
        guard connection >= 0 else {
            if errno == EINTR || errno == EAGAIN || errno == ECONNABORTED { return nil }
            throw .system("accept", boundAddress, errno)
        }
        return ConnectedSocket(descriptor: connection)
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

/// One accepted connection; closed on deinit.
package final class ConnectedSocket {
    private let descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// The bytes of a request up to its blank line (`\r\n\r\n`), at most `limit`; nil when the peer went quiet for
    /// `milliseconds`, closed early, or sent more than `limit` without one.
    package func readHead(limit: Int = 8192, waitingAtMost milliseconds: Int32 = 2000) -> [UInt8]? {
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while head.count < limit {
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, milliseconds) > 0 else { return nil }
            let got = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            head += chunk[0..<got]
            if head.count >= 4, head.suffix(4) == [13, 10, 13, 10] { return head }
            if let end = head.firstRange(of: [13, 10, 13, 10]) { return Array(head[..<end.upperBound]) }
        }
        return nil
    }

    /// Sends all of `bytes` (a peer that went away is ignored: the answer had nobody to read it).
    package func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                systemSend(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return }
            offset += sent
        }
    }
}

/// `accept(2)` and `send(2)` under names the methods do not shadow.
private func systemAccept(_ descriptor: Int32) -> Int32 { accept(descriptor, nil, nil) }

private func systemSend(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        send(descriptor, bytes, count, Int32(MSG_NOSIGNAL))
    #else
        send(descriptor, bytes, count, 0)
    #endif
}
