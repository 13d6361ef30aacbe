import Foundation
import NativeCurl
import Testing

@testable import IngestCore
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTestSupport

/// The libcurl wrapper on its own: many transfers on one multi thread, curl's error text kept, http refused,
/// a file that changes while it is sent.
@Suite struct HTTPClientTests {
    @Test func manyParallelPutsOnOneMultiHandle() throws {
        let backend = try FixtureBackend()
        let folder = try TemporaryFolder("parallel")
        defer { folder.remove() }
        let count = 12
        var paths: [String] = []
        for index in 0..<count {
            paths.append(try writeRandomFile(folder.path + "/f\(index)", size: 300_000 + index, seed: UInt64(index)))
        }
        // Start them all from this thread before waiting on any: they proceed together on the client's thread.
        var transfers: [HTTPTransfer] = []
        for (index, path) in paths.enumerated() {
            let url = try signedURL(backend, key: "p/\(index)")
            let request = HTTPRequest(method: "PUT", url: url, body: try HTTPBody.file(path))
            transfers.append(try HTTPClient.shared.start(request).get())
        }
        for transfer in transfers {
            let response = try transfer.wait().get()
            #expect(response.status == 200)
        }
        let objects = try backend.objects()
        #expect(objects.count == count)
        for (index, path) in paths.enumerated() {
            #expect(objects["users/p/\(index)"]?["sha256"] as? String == (try sha256sum(path)))
        }
    }

    /// A signed PUT URL from the fixture (its seed-002 ticket endpoint), re-pointed at `key`'s signature.
    func signedURL(_ backend: FixtureBackend, key: String) throws -> String {
        // The fixture signs "PUT\n/<key>\n<expires>" with its own key; ask it through seed 000's ticket endpoint.
        let body = HTTPBody.bytes(
            Array(#"{"user_id": "p", "filename": "\#(key.replacingOccurrences(of: "p/", with: ""))"}"#.utf8))
        var request = HTTPRequest(method: "POST", url: backend.base + "/api/upload-url", body: body)
        request.headers = [("Content-Type", "application/json")]
        let response = try HTTPClient.shared.perform(request).get()
        let json = try JSONValue.parse(response.body)
        return try #require(json.lookup("upload_url")?.stringValue)
    }

    @Test func curlsErrorTextIsKept() throws {
        var request = HTTPRequest(method: "GET", url: "http://127.0.0.1:1/nothing")
        request.connectTimeout = 5
        guard case .failure(let error) = HTTPClient.shared.perform(request) else {
            Issue.record("a closed port answered")
            return
        }
        #expect(error.isTransient)
        #expect(error.description.contains("Failed to connect to 127.0.0.1 port 1"), "\(error)")

        let bad = HTTPClient.shared.perform(HTTPRequest(method: "GET", url: "https://no-such-host.invalid/x"))
        guard case .failure(.curl(let curl)) = bad else {
            Issue.record("expected a curl error, got \(bad)")
            return
        }
        #expect(curl.code == CurlError.couldNotResolveHost)
        #expect(curl.text.contains("no-such-host.invalid"), "\(curl.text)")
        #expect(!curl.isTransient)
    }

    @Test func plainHTTPOnlyToLoopbackUnlessAllowed() {
        #expect(HTTPClient.refusal(for: HTTPRequest(method: "GET", url: "http://example.com/")) != nil)
        #expect(HTTPClient.refusal(for: HTTPRequest(method: "GET", url: "http://127.0.0.1:9/")) == nil)
        #expect(HTTPClient.refusal(for: HTTPRequest(method: "GET", url: "http://[::1]:9/")) == nil)
        #expect(HTTPClient.refusal(for: HTTPRequest(method: "GET", url: "http://localhost/")) == nil)
        #expect(HTTPClient.refusal(for: HTTPRequest(method: "GET", url: "file:///etc/passwd")) != nil)
        var allowed = HTTPRequest(method: "GET", url: "http://example.com/")
        allowed.allowInsecureHTTP = true
        #expect(HTTPClient.refusal(for: allowed) == nil)
        let smuggled = HTTPRequest(method: "GET", url: "https://example.com/", headers: [("X-A", "1\r\nX-B: 2")])
        #expect(HTTPClient.refusal(for: smuggled)?.contains("line break") == true)
    }

    @Test func aFileThatChangesWhileSentFailsTheTransfer() throws {
        // The server waits before reading, so the body is still being read when the file grows.
        let backend = try FixtureBackend(faults: #"[{"method": "PUT", "action": "delay", "seconds": 1, "times": 1}]"#)
        let folder = try TemporaryFolder("torn")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/growing.mov", size: 32 << 20)
        let url = try signedURL(backend, key: "p/torn")
        let transfer = try HTTPClient.shared.start(HTTPRequest(method: "PUT", url: url, body: try HTTPBody.file(path)))
            .get()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: [1, 2, 3])
        try handle.close()
        let result = transfer.wait()
        guard case .failure(.body(.changed(let what))) = result else {
            Issue.record("expected a changed-file failure, got \(result)")
            return
        }
        #expect(what.contains("33554432 → 33554435"))
        #expect(try backend.objects().isEmpty)
    }

    /// `max_elapsed` leaves out time queued for a `rate` slot: a request that queued about 2 s (another file took
    /// the slot), then met a 503 asking for a 1 s wait, is retried under a 2.5 s budget. Counted from its first
    /// attempt it has used about 1 s; counted from when it began to queue, 3 s, and it gave up with the 503.
    @Test func timeQueuedForARateSlotDoesNotCountTowardMaxElapsed() throws {
        let backend = try FixtureBackend(
            faults: #"""
                [{"method": "POST", "path": "/api/upload-url", "action": "status", "status": 503, "retry_after": "1",
                  "times": 1}]
                """#)
        defer { backend.stop() }
        var options = NetworkOptions()
        options.maxElapsed = DurationValue(seconds: 2.5)
        let limiter = RateLimiter(rate: Rate(count: 1, window: 2))
        limiter.acquire()  // another file's request, just now
        let body = #"{"user_id": "u", "filename": "a.mov", "content_type": "video/quicktime"}"#
        var request = HTTPRequest(method: "POST", url: backend.base + "/api/upload-url", body: .bytes(Array(body.utf8)))
        request.headers = [("Content-Type", "application/json")]
        let outcome = try Exchange(stage: "request", options: options, limiter: limiter).send(request)
        #expect(outcome.response.status == 200, "\(outcome.response.bodyText)")
        #expect(outcome.attempts == 2)
    }

    @Test func retryAfterParsesSecondsAndDates() {
        #expect(Exchange.parseRetryAfter("3", now: Date()) == 3)
        #expect(Exchange.parseRetryAfter("soon", now: Date()) == nil)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(Exchange.parseRetryAfter(formatter.string(from: now.addingTimeInterval(120)), now: now) == 120)
        #expect(Exchange.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: Date()) == 0)
    }

    @Test func s3ErrorBodiesShowCodeAndMessage() {
        let xml =
            "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
        let response = HTTPResponse(
            status: 403, headers: [], body: Array(xml.utf8), truncated: false, effectiveURL: nil, bytesSent: 0)
        #expect(ServerMessage.of(response) == "AccessDenied: Request has expired")
        #expect(UploadStage.isExpired(response))
    }
}
