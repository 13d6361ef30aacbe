internal import CCurl
internal import CCurlShims
import Foundation

/// One HTTP request as the stages describe it; `HTTPClient` turns it into a configured easy handle.
package struct HTTPRequest: Sendable {
    package enum Version: String, Sendable {
        /// HTTP/1.1 only.
        case http1_1 = "1.1"
        /// HTTP/2 when TLS negotiates it (ALPN), else HTTP/1.1.
        case http2 = "2"
    }

    package var method: String
    package var url: String
    /// In order; names may repeat. Values must not contain CR or LF (checked by `HTTPClient.start`).
    package var headers: [(name: String, value: String)]
    package var body: HTTPBody?
    /// Whole-transfer limit in seconds (nil: none — a 2 GiB upload may take long; the low-speed limit guards it).
    package var timeout: Double?
    package var connectTimeout: Double = 30
    /// Abort when fewer than `lowSpeedBytes` per second flow for `lowSpeedTime` seconds (a stalled peer).
    package var lowSpeedBytes = 1
    package var lowSpeedTime = 60
    package var version: Version = .http2
    /// A PEM file of trusted CAs instead of the system bundle. Verification itself is never turned off.
    package var caBundle: String?
    /// Response bytes kept; the rest are counted and dropped (an error page or a ticket is small).
    package var maxResponseBytes = 1 << 20
    /// Plain http to hosts other than loopback (the pipeline's `allow_http: true`).
    package var allowInsecureHTTP = false
    /// Off: `Exchange` decides on each redirect itself (`follow_redirects`); libcurl would follow to any origin and
    /// forward every configured header but `Authorization` and `Cookie`.
    package var followRedirects = false
    /// A connection of its own, not one kept from an earlier transfer (`CURLOPT_FRESH_CONNECT`): on a reused
    /// connection that dies before any answer, libcurl sends the request again by itself (it takes that for an idle
    /// connection the server closed), which repeats a call the server may have acted on with nobody asking.
    package var freshConnection = false
    /// The run's shared bandwidth cap (`--bwlimit`) that the body is drawn through; nil sends at full speed.
    package var sendLimiter: (any SendAllowance)?

    package init(
        method: String, url: String, headers: [(name: String, value: String)] = [], body: HTTPBody? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What came back: status, headers of the final response (after redirects and 100-continue), body (capped).
package struct HTTPResponse: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]
    /// True when the body was longer than `maxResponseBytes` and was cut.
    package var truncated: Bool
    /// The URL that answered (after redirects).
    package var effectiveURL: String?
    /// Body bytes curl sent (`CURLINFO_SIZE_UPLOAD_T`); the whole body for any 2xx answer to a request with one.
    package var bytesSent: Int64

    package init(
        status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], truncated: Bool = false,
        effectiveURL: String? = nil, bytesSent: Int64 = 0
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.truncated = truncated
        self.effectiveURL = effectiveURL
        self.bytesSent = bytesSent
    }

    /// The first header of that name, compared without case.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    package var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// Why a request produced no response.
package enum HTTPError: Error, Sendable, CustomStringConvertible {
    /// Refused before any byte left: bad URL, a scheme other than http(s), plain http to a remote host.
    case refused(String)
    /// curl failed: its code and the error-buffer text ("Failed to connect to host port 443 …").
    case curl(CurlError)
    /// The body could not be produced (file unreadable or changed while sent).
    case body(HTTPBodyProblem)
    /// A success status came back before the whole body went out (the server stopped reading and answered): the
    /// upload is not delivered, whatever the status says.
    case incomplete(status: Int, sent: Int64, length: Int64)
    case cancelled

    package var description: String {
        switch self {
        case .refused(let why): return why
        case .curl(let error): return error.text
        case .body(let problem): return problem.description
        case .incomplete(let status, let sent, let length):
            return
                "the server answered \(status) after \(Self.grouped(sent)) of \(Self.grouped(length)) bytes were sent"
        case .cancelled: return "cancelled"
        }
    }

    /// Worth another attempt: a broken, refused or timed-out connection, or a body cut short (as a dropped one).
    package var isTransient: Bool {
        switch self {
        case .curl(let error): return error.isTransient
        case .incomplete: return true
        default: return false
        }
    }

    /// 60000000 → "60,000,000" (the same in every locale).
    static func grouped(_ number: Int64) -> String {
        var digits = String(number.magnitude)
        var index = digits.endIndex
        while digits.distance(from: digits.startIndex, to: index) > 3 {
            index = digits.index(index, offsetBy: -3)
            digits.insert(",", at: index)
        }
        return number < 0 ? "-" + digits : digits
    }
}

/// One transfer in flight. Created by `HTTPClient.start`; the caller waits for it (the runner's worker threads
/// block here while the client's single thread moves every transfer). All curl state is touched only on the
/// client's thread; the caller sees the result through `wait()`.
// unchecked: wraps a curl easy handle touched only on the client's thread; `result` is read under `condition`
package final class HTTPTransfer: @unchecked Sendable {
    let easy: CurlEasy
    let reader: HTTPBodyReader?
    let maxResponseBytes: Int
    /// The run's bandwidth cap the body is drawn through (see `SendAllowance`).
    var sendLimiter: (any SendAllowance)?
    /// Set by the read callback when the cap paused the transfer; the client thread resumes it (client thread only).
    var pausedForBandwidth = false
    private let condition = NSCondition()
    private var result: Result<HTTPResponse, HTTPError>?
    private var cancelRequested = false

    // Filled by callbacks on the client thread.
    var responseBody: [UInt8] = []
    var truncated = false
    var responseHeaders: [(name: String, value: String)] = []
    /// The status of the response whose headers are coming in, and whether a final (non-1xx) one's ended.
    var headerStatus = 0
    var answered = false

    init(easy: CurlEasy, reader: HTTPBodyReader?, maxResponseBytes: Int) {
        self.easy = easy
        self.reader = reader
        self.maxResponseBytes = maxResponseBytes
    }

    /// Blocks until the transfer is done.
    package func wait() -> Result<HTTPResponse, HTTPError> {
        condition.lock()
        defer { condition.unlock() }
        while result == nil { condition.wait() }
        return result!
    }

    /// Asks the transfer to stop; it ends with `.cancelled` within about a second (curl's progress tick).
    package func cancel() {
        condition.lock()
        cancelRequested = true
        condition.unlock()
    }

    var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelRequested
    }

    /// The result of a finished transfer (see `outcome(for:)` in HTTPAnswer.swift).
    func complete(_ code: CURLcode) { fail(outcome(for: code)) }

    func fail(_ outcome: Result<HTTPResponse, HTTPError>) {
        condition.lock()
        result = outcome
        condition.broadcast()
        condition.unlock()
    }
}

// MARK: - C callbacks (userdata is the transfer, unretained: the client holds it while curl may call back)

private func transfer(_ userdata: UnsafeMutableRawPointer?) -> HTTPTransfer {
    Unmanaged<HTTPTransfer>.fromOpaque(userdata!).takeUnretainedValue()
}

private let readCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    buffer, size, count, userdata in
    let transfer = transfer(userdata)
    guard let buffer, let reader = transfer.reader else { return 0 }
    var capacity = size * count
    var granted = 0
    if let limiter = transfer.sendLimiter, reader.position < reader.body.length {
        granted = limiter.take(upTo: min(capacity, Int(min(Int64(Int.max), reader.body.length - reader.position))))
        if granted == 0 {
            transfer.pausedForBandwidth = true
            return ingest_curl_readfunc_pause()
        }
        capacity = granted
    }
    guard let written = reader.read(into: buffer, capacity: capacity) else { return ingest_curl_readfunc_abort() }
    if granted > written { transfer.sendLimiter?.giveBack(granted - written) }
    return written
}

private let seekCallback: @convention(c) (UnsafeMutableRawPointer?, curl_off_t, Int32) -> Int32 = {
    userdata, offset, origin in
    let transfer = transfer(userdata)
    guard origin == SEEK_SET, let reader = transfer.reader else { return 2 }  // CURL_SEEKFUNC_CANTSEEK
    return reader.seek(to: Int64(offset)) ? 0 : 1  // CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL
}

private let writeCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, userdata in
    let transfer = transfer(userdata)
    let total = size * count
    let room = max(0, transfer.maxResponseBytes - transfer.responseBody.count)
    if let data, room > 0 {
        let kept = min(room, total)
        transfer.responseBody.append(
            contentsOf: UnsafeRawBufferPointer(start: data, count: kept).bindMemory(to: UInt8.self))
    }
    if total > room {
        // Past the cap: the answer is cut here rather than read to its end (a 200 MB "ticket"); the transfer
        // ends with CURLE_WRITE_ERROR, which `outcome(for:)` reads as this truncated answer.
        transfer.truncated = true
        return 0
    }
    return total
}

private let headerCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, userdata in
    let transfer = transfer(userdata)
    let total = size * count
    guard let data else { return total }
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: total), as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    if line.hasPrefix("HTTP/") {
        // A new response begins (after 100 Continue or a redirect): only the final one's headers count.
        transfer.responseHeaders.removeAll()
        transfer.responseBody.removeAll()
        transfer.truncated = false
        transfer.headerStatus = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        transfer.answered = false
    } else if line.isEmpty {
        transfer.answered = transfer.headerStatus >= 200
    } else if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].trimmingCharacters(in: .whitespaces)
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        if transfer.responseHeaders.count < 200 { transfer.responseHeaders.append((name, value)) }
    }
    return total
}

private let progressCallback:
    @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
        -> Int32 = { userdata, _, _, _, _ in
            transfer(userdata).isCancelled ? 1 : 0
        }

/// Many transfers driven by one curl multi handle on one dedicated thread running `curl_multi_poll`: callers on
/// any thread `start` a transfer and `wait` for it, so N uploads in flight cost one thread, not N blocked ones,
/// and connections (and HTTP/2 streams) are reused across files.
// unchecked: wraps a curl multi handle driven only by its own thread; `pending` is shared under `lock`
package final class HTTPClient: @unchecked Sendable {
    package static let shared = HTTPClient()

    private let multi: CurlMulti?
    private let setupError: CurlError?
    private let lock = NSLock()
    private var pending: [HTTPTransfer] = []
    /// Only touched on the client thread.
    private var active: [UnsafeMutableRawPointer: HTTPTransfer] = [:]
    private var thread: Thread?

    package init() {
        do {
            multi = try CurlMulti()
            setupError = nil
        } catch {
            multi = nil
            setupError = error
        }
    }

    /// Sends `request` and blocks the calling thread until it completes.
    package func perform(_ request: HTTPRequest, observer: HTTPBodyObserver? = nil) -> Result<HTTPResponse, HTTPError> {
        switch start(request, observer: observer) {
        case .success(let transfer): return transfer.wait()
        case .failure(let error): return .failure(error)
        }
    }

    /// Configures a handle for `request` and hands it to the client thread.
    package func start(_ request: HTTPRequest, observer: HTTPBodyObserver? = nil) -> Result<HTTPTransfer, HTTPError> {
        guard let multi else { return .failure(.curl(setupError!)) }
        if let refusal = Self.refusal(for: request) { return .failure(.refused(refusal)) }
        let transfer: HTTPTransfer
        do {
            transfer = try configure(request, observer: observer)
        } catch let error as HTTPError {
            return .failure(error)
        } catch {
            return .failure(.refused("\(error)"))
        }
        lock.lock()
        pending.append(transfer)
        if thread == nil {
            let thread = Thread { [self] in self.loop() }
            thread.name = "ingest-curl"
            self.thread = thread
            thread.start()
        }
        lock.unlock()
        multi.wakeup()
        return .success(transfer)
    }

    /// Why the request must not be sent, or nil. Plain http only to loopback unless the pipeline allows it;
    /// no header may smuggle a CR/LF (a value from a template could otherwise add headers).
    package static func refusal(for request: HTTPRequest) -> String? {
        guard let components = URLComponents(string: request.url), let scheme = components.scheme?.lowercased(),
            let host = components.encodedHost, !host.isEmpty  // not .host: its IDNA decoding loads ICU (~1.5 MiB RSS)
        else { return "'\(request.url)' is not an absolute http(s) URL" }
        switch scheme {
        case "https": break
        case "http":
            if !request.allowInsecureHTTP && !isLoopback(host) {
                return "plain http to \(host) is refused (use https, or allow_http: true in the pipeline)"
            }
        default: return "scheme '\(scheme)' is not allowed (only http and https)"
        }
        for header in request.headers {
            if header.name.isEmpty
                || header.name.unicodeScalars.contains(where: { $0 == ":" || $0.value <= 0x20 || $0.value == 0x7F })
            {
                return "invalid header name '\(header.name)'"
            }
            // Scalars, not Characters: "\r\n" is one Character and would slip past a Character test.
            if header.value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                return "the value of header '\(header.name)' contains a line break"
            }
        }
        return nil
    }

    package static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare.hasSuffix(".localhost") || bare == "::1" { return true }
        let parts = bare.split(separator: ".")
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    private func configure(_ request: HTTPRequest, observer: HTTPBodyObserver?) throws -> HTTPTransfer {
        let easy = try CurlEasy()
        var reader: HTTPBodyReader?
        if let body = request.body {
            do {
                reader = try HTTPBodyReader(body: body)
            } catch {
                throw HTTPError.body(error)
            }
            reader?.observer = observer
            // Each attempt is a new transfer from byte 0: what an observer saw of an earlier one no longer counts.
            observer?.restart()
        }
        let transfer = HTTPTransfer(easy: easy, reader: reader, maxResponseBytes: request.maxResponseBytes)
        transfer.sendLimiter = request.sendLimiter
        let me = Unmanaged.passUnretained(transfer).toOpaque()
        try setConnectionOptions(easy, request)
        try setCallbacks(easy, me)
        try setMethodAndBody(easy, request, me)
        try setHeaders(easy, request)
        return transfer
    }

    /// Where to connect and how: protocols, redirects, TLS checks, HTTP version, timeouts.
    private func setConnectionOptions(_ easy: CurlEasy, _ request: HTTPRequest) throws {
        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_NOSIGNAL, 1)  // threads: no SIGALRM for DNS timeouts
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, request.allowInsecureHTTP ? "http,https" : "https")
        try easy.set(CURLOPT_FOLLOWLOCATION, request.followRedirects ? 1 : 0)
        if request.freshConnection { try easy.set(CURLOPT_FRESH_CONNECT, 1) }
        try easy.set(CURLOPT_MAXREDIRS, 5)
        try easy.set(CURLOPT_SSL_VERIFYPEER, 1)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caBundle = request.caBundle { try easy.set(CURLOPT_CAINFO, caBundle) }
        try easy.set(
            CURLOPT_HTTP_VERSION,
            request.version == .http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeout * 1000))
        if let timeout = request.timeout { try easy.set(CURLOPT_TIMEOUT_MS, Int(timeout * 1000)) }
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, request.lowSpeedBytes)
        try easy.set(CURLOPT_LOW_SPEED_TIME, request.lowSpeedTime)
        try easy.set(CURLOPT_ACCEPT_ENCODING, "")  // whatever curl can decode
        // Proxies: curl reads http_proxy / https_proxy / no_proxy itself when CURLOPT_PROXY is unset.
    }

    /// The response body, header and progress callbacks, each given the transfer (`me`) as userdata.
    private func setCallbacks(_ easy: CurlEasy, _ me: UnsafeMutableRawPointer) throws {
        _ = ingest_curl_easy_setopt_write_function(easy.handle, writeCallback)
        try easy.set(CURLOPT_WRITEDATA, pointer: me)
        _ = ingest_curl_easy_setopt_header_function(easy.handle, headerCallback)
        try easy.set(CURLOPT_HEADERDATA, pointer: me)
        _ = ingest_curl_easy_setopt_xferinfo_function(easy.handle, progressCallback)
        try easy.set(CURLOPT_XFERINFODATA, pointer: me)
        try easy.set(CURLOPT_NOPROGRESS, 0)
    }

    /// The method, and for a request with a body its read and seek callbacks (userdata `me`) and length.
    private func setMethodAndBody(_ easy: CurlEasy, _ request: HTTPRequest, _ me: UnsafeMutableRawPointer) throws {
        let method = request.method.uppercased()
        if let body = request.body {
            _ = ingest_curl_easy_setopt_read_function(easy.handle, readCallback)
            try easy.set(CURLOPT_READDATA, pointer: me)
            _ = ingest_curl_easy_setopt_seek_function(easy.handle, seekCallback)
            try easy.set(CURLOPT_SEEKDATA, pointer: me)
            // Curl's buffer is what the read callback fills: the file goes out in 256 KiB preads. Measured for issue
            // 13 (1 GiB PUT to a loopback sink, journal on): 64 KiB, curl's default, took 0.70-0.81 s against
            // 0.67 s (more system time: four times the read, send and hand-over calls); 512 KiB-1 MiB gained
            // nothing and raised peak RSS by 1.5-5 MiB.
            try easy.set(CURLOPT_UPLOAD_BUFFERSIZE, 256 * 1024)
            if method == "POST" {
                try easy.set(CURLOPT_POST, 1)
                try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: body.length)
                // Keep POST (and its body) across 301/302/303, as a retried form must.
                try easy.set(CURLOPT_POSTREDIR, 7)
            } else {
                try easy.set(CURLOPT_UPLOAD, 1)
                try easy.set(CURLOPT_INFILESIZE_LARGE, offset: body.length)
                if method != "PUT" { try easy.set(CURLOPT_CUSTOMREQUEST, method) }
            }
        } else if method == "GET" {
            try easy.set(CURLOPT_HTTPGET, 1)
        } else if method == "HEAD" {
            try easy.set(CURLOPT_NOBODY, 1)
        } else {
            try easy.set(CURLOPT_CUSTOMREQUEST, method)
        }
    }

    /// The request's headers; a body without a Content-Type gets none (curl would invent form-urlencoded).
    private func setHeaders(_ easy: CurlEasy, _ request: HTTPRequest) throws {
        let headers = CurlStringList()
        for header in request.headers { try headers.append("\(header.name): \(header.value)") }
        if request.body != nil && !request.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            try headers.append("Content-Type:")  // no invented form-urlencoded type
        }
        try easy.set(CURLOPT_HTTPHEADER, list: headers)
    }

    private func loop() {
        guard let multi else { return }
        while true {
            lock.lock()
            let adding = pending
            pending.removeAll()
            lock.unlock()
            for transfer in adding {
                do {
                    try multi.add(transfer.easy)
                    active[transfer.easy.handle] = transfer
                } catch {
                    transfer.fail(.failure(.curl(error)))
                }
            }
            do {
                try multi.perform()
            } catch {
                for (_, transfer) in active {
                    multi.remove(transfer.easy)
                    transfer.fail(.failure(.curl(error)))
                }
                active.removeAll()
            }
            for (handle, code) in multi.finished() {
                guard let transfer = active.removeValue(forKey: handle) else { continue }
                multi.remove(transfer.easy)
                transfer.complete(code)
            }
            multi.poll(timeoutMilliseconds: Self.resumePaused(active.values))
        }
    }
}
