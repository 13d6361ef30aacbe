internal import CCurl
internal import CCurlShims
import Foundation

/// A failed libcurl call: which call, curl's code, and curl's own words — the `CURLOPT_ERRORBUFFER` text when
/// curl wrote one (it names the host, the TLS problem, the timeout), else `curl_easy_strerror`. FoundationNetworking
/// drops that text; we keep it because it is what a user needs to fix a network problem.
package struct CurlError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Raw `CURLcode` (or `CURLMcode` for multi calls).
    package var code: Int32
    package var call: String
    package var text: String

    package init(code: Int32, call: String, text: String) {
        self.code = code
        self.call = call
        self.text = text
    }

    init(_ code: CURLcode, call: String, errorBuffer: UnsafePointer<CChar>? = nil) {
        var text = errorBuffer.map { String(cString: $0) } ?? ""
        if text.isEmpty { text = String(cString: curl_easy_strerror(code)) }
        self.init(code: Int32(code.rawValue), call: call, text: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    package var description: String { text }

    package static let unsupportedProtocol: Int32 = 1
    package static let malformedURL: Int32 = 3
    package static let couldNotResolveProxy: Int32 = 5
    package static let couldNotResolveHost: Int32 = 6
    package static let couldNotConnect: Int32 = 7
    package static let weirdServerReply: Int32 = 8
    package static let http2: Int32 = 16
    package static let partialFile: Int32 = 18
    package static let readError: Int32 = 26
    package static let timedOut: Int32 = 28
    package static let sslConnectError: Int32 = 35
    package static let abortedByCallback: Int32 = 42
    package static let gotNothing: Int32 = 52
    package static let sendError: Int32 = 55
    package static let receiveError: Int32 = 56
    package static let peerFailedVerification: Int32 = 60
    package static let sendFailRewind: Int32 = 65
    package static let http2Stream: Int32 = 92

    /// Failures a new attempt may cure: the connection broke, timed out or was refused. A name that does not
    /// resolve or a certificate that does not verify will not change by retrying.
    package var isTransient: Bool {
        [
            Self.couldNotConnect, Self.timedOut, Self.sendError, Self.receiveError, Self.gotNothing, Self.partialFile,
            Self.http2, Self.http2Stream, Self.weirdServerReply,
        ].contains(code)
    }
}

/// `curl_global_init` once per process, before the first handle (it is not thread-safe to call concurrently).
enum CurlGlobal {
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
}

/// A `curl_slist` (request headers). Owns the list; `deinit` frees it. Append copies the string.
package final class CurlStringList {
    private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    package init() {}

    package init(_ lines: [String]) throws(CurlError) {
        for line in lines { try append(line) }
    }

    /// `curl_slist_append`; throws when curl cannot allocate.
    package func append(_ line: String) throws(CurlError) {
        guard let next = curl_slist_append(pointer, line) else {
            throw CurlError(code: 27, call: "curl_slist_append", text: "out of memory")
        }
        pointer = next
    }

    deinit { curl_slist_free_all(pointer) }
}

/// One `CURL *` easy handle and its error buffer. Throwing init, non-optional handle, `deinit` cleans up; the
/// setters are the typed shims over the variadic `curl_easy_setopt`.
package final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER`: curl writes a sentence here on failure; it must outlive the handle's use.
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// Strings and lists handed to curl that it does not copy (slists) are kept alive here.
    private var retained: [AnyObject] = []

    package init() throws(CurlError) {
        guard CurlGlobal.initialized else {
            throw CurlError(code: 2, call: "curl_global_init", text: "libcurl failed to initialise")
        }
        guard let handle = curl_easy_init() else {
            throw CurlError(code: 2, call: "curl_easy_init", text: "curl_easy_init returned NULL")
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        _ = ingest_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// `curl_easy_pause(CURLPAUSE_CONT)`: a transfer whose read callback paused it (`--bwlimit`) goes on.
    func unpause() { _ = curl_easy_pause(handle, 0) }

    private func check(_ code: CURLcode, _ option: String) throws(CurlError) {
        guard code == CURLE_OK else { throw CurlError(code, call: "curl_easy_setopt(\(option))") }
    }

    func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
        try check(ingest_curl_easy_setopt_long(handle, option, value), "\(option.rawValue)")
    }

    func set(_ option: CURLoption, offset value: Int64) throws(CurlError) {
        try check(ingest_curl_easy_setopt_off_t(handle, option, curl_off_t(value)), "\(option.rawValue)")
    }

    /// String options are copied by curl (since 7.17), so the Swift string need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws(CurlError) {
        try check(ingest_curl_easy_setopt_string(handle, option, value), "\(option.rawValue)")
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(CurlError) {
        try check(ingest_curl_easy_setopt_pointer(handle, option, value), "\(option.rawValue)")
    }

    /// curl keeps the list's pointer without copying: the handle retains the list until it is freed.
    func set(_ option: CURLoption, list: CurlStringList) throws(CurlError) {
        retained.append(list)
        try check(ingest_curl_easy_setopt_slist(handle, option, list.pointer), "\(option.rawValue)")
    }

    func long(_ info: CURLINFO) -> Int {
        var value = 0
        _ = ingest_curl_easy_getinfo_long(handle, info, &value)
        return value
    }

    func offset(_ info: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        _ = ingest_curl_easy_getinfo_off_t(handle, info, &value)
        return Int64(value)
    }

    func double(_ info: CURLINFO) -> Double {
        var value = 0.0
        _ = ingest_curl_easy_getinfo_double(handle, info, &value)
        return value
    }

    func string(_ info: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>?
        guard ingest_curl_easy_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// The error for a finished transfer's code, with the error buffer's text.
    func error(for code: CURLcode) -> CurlError {
        CurlError(code, call: "curl_multi_perform", errorBuffer: errorBuffer)
    }
}

/// One `CURLM *` multi handle: many transfers driven by one thread. `deinit` cleans up.
package final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    package init() throws(CurlError) {
        guard CurlGlobal.initialized, let handle = curl_multi_init() else {
            throw CurlError(code: 2, call: "curl_multi_init", text: "curl_multi_init returned NULL")
        }
        self.handle = handle
        // HTTP/2 streams to the same host share one connection instead of opening one each.
        _ = ingest_curl_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    }

    deinit { curl_multi_cleanup(handle) }

    private func check(_ code: CURLMcode, _ call: String) throws(CurlError) {
        guard code == CURLM_OK else {
            throw CurlError(code: Int32(code.rawValue), call: call, text: String(cString: curl_multi_strerror(code)))
        }
    }

    func add(_ easy: CurlEasy) throws(CurlError) {
        try check(curl_multi_add_handle(handle, easy.handle), "curl_multi_add_handle")
    }
    func remove(_ easy: CurlEasy) { _ = curl_multi_remove_handle(handle, easy.handle) }

    /// `curl_multi_perform`: moves every transfer as far as it can without blocking.
    func perform() throws(CurlError) {
        var running: Int32 = 0
        try check(curl_multi_perform(handle, &running), "curl_multi_perform")
    }

    /// `curl_multi_poll`: sleeps until a socket is ready, `wakeup()` is called, or the timeout passes.
    func poll(timeoutMilliseconds: Int32) {
        var ready: Int32 = 0
        _ = curl_multi_poll(handle, nil, 0, timeoutMilliseconds, &ready)
    }

    /// `curl_multi_wakeup`: the one multi call that is safe from another thread.
    func wakeup() { _ = curl_multi_wakeup(handle) }

    /// Finished transfers: each easy handle with its result, from `curl_multi_info_read`.
    func finished() -> [(UnsafeMutableRawPointer, CURLcode)] {
        var done: [(UnsafeMutableRawPointer, CURLcode)] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                done.append((easy, message.pointee.data.result))
            }
        }
        return done
    }
}

extension CurlEasy {
    /// `libcurl 7.88.1 (TLS: OpenSSL/3.0.x)`, from the library loaded (`curl_version_info`).
    package static var libraryVersion: String {
        guard let curl = curl_version_info(CURLVERSION_FIRST)?.pointee else { return "libcurl ?" }
        let version = curl.version.map { String(cString: $0) } ?? "?"
        let tls = curl.ssl_version.map { String(cString: $0) } ?? "no TLS"
        return "libcurl \(version) (TLS: \(tls))"
    }
}
