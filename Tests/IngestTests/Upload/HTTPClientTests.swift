import Foundation
import IngestNative
import Testing

@testable import Ingest

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
        #expect(Exchange.parseRetryAfter("3") == 3)
        #expect(Exchange.parseRetryAfter("soon") == nil)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let later = formatter.string(from: Date().addingTimeInterval(120))
        let parsed = Exchange.parseRetryAfter(later) ?? -1
        #expect(parsed > 100 && parsed <= 120)
        #expect(Exchange.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == 0)
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

/// Templates: typed values, missing variables named, keys sanitised, form bodies exact.
@Suite struct TemplateTests {
    func scope(_ facts: JSONObject = [:]) -> TemplateScope {
        let item = Item(path: "/data/in/pet-7/visit one.m4a", relativePath: "pet-7/visit one.m4a", size: 12)
        item.facts = facts
        return TemplateScope(
            item: item, context: StageContext(settings: RunSettings(environment: ["API": "https://api.test"])),
            stage: "request")
    }

    @Test func soleVariablesKeepTheirType() throws {
        let facts: JSONObject = ["ticket": ["visit_id": "v-1", "n": 3, "fields": ["key": "a/b", "policy": "p"]]]
        let yaml = """
            version: 1
            name: t
            stages:
              - request: { url: "${API}/t", as: ticket }
              - request:
                  url: "${API}/x"
                  json: { n: "{{ticket.n}}", id: "{{ticket.visit_id}}", fields: "{{ticket.fields}}", text: "n={{ticket.n}}",
                          plain: 5, flag: true, none: null, quoted: "5", list: ["{{file.name}}", 1.5] }
                  as: out

            """
        let pipeline = try Pipeline.parse(yaml: yaml, environment: ["API": "https://api.test"])
        let stage = try #require(pipeline.stages.last?.stage as? RequestStage)
        let body = try #require(stage.options.json).render(scope(facts))
        #expect(
            body.serialized()
                == #"{"n":3,"id":"v-1","fields":{"key":"a/b","policy":"p"},"text":"n=3","plain":5,"flag":true,"none":null,"quoted":"5","list":["visit one.m4a",1.5]}"#
        )
    }

    @Test func builtInsAndMissingValues() throws {
        let scope = self.scope()
        #expect(
            try Template("{{file.stem}}|{{file.ext}}|{{file.path}}|{{dir.name}}|{{env.API}}").render(scope)
                == "visit one|m4a|pet-7/visit one.m4a|pet-7|https://api.test")
        let uuid = try Template("{{uuid}}").render(scope)
        #expect(try Template("{{uuid}}").render(scope) == uuid)
        #expect(UUID(uuidString: uuid) != nil)
        #expect(try Template("{{date.yyyyMMdd}}").render(scope).count == 8)
        #expect(throws: ItemFailed.self) { try Template("{{ticket.visit_id}}").render(scope) }
        do {
            _ = try Template("{{env.NOPE}}").render(scope)
        } catch let failed as ItemFailed {
            #expect(
                failed.failures.first?.message == "{{env.NOPE}} has no value: environment variable 'NOPE' is not set")
        }
        #expect(throws: TemplateSyntaxError.self) { try Template("{{ unclosed") }
        #expect(throws: TemplateSyntaxError.self) { try Template("{{a..b}}") }
    }

    @Test func keysAreSanitised() throws {
        let scope = self.scope()
        #expect(try scope.sanitizedKey("/a//b/./c\u{7}d.mov") == "a/b/c_d.mov")
        #expect(throws: ItemFailed.self) { try scope.sanitizedKey("a/../../etc/passwd") }
        #expect(throws: ItemFailed.self) { try scope.sanitizedKey("//") }
    }

    @Test func multipartFormIsExact() {
        let form = MultipartForm(
            fields: [("key", "k/${filename}"), ("policy", "cA==")], fileName: "a\"b.m4a", fileType: "audio/m4a")
        let b = form.boundary
        let head = String(decoding: form.head, as: UTF8.self)
        #expect(
            head == "--\(b)\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk/${filename}\r\n"
                + "--\(b)\r\nContent-Disposition: form-data; name=\"policy\"\r\n\r\ncA==\r\n"
                + "--\(b)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a%22b.m4a\"\r\n"
                + "Content-Type: audio/m4a\r\n\r\n")
        #expect(String(decoding: form.tail, as: UTF8.self) == "\r\n--\(b)--\r\n")
    }

    @Test func jsonParserKeepsOrder() throws {
        let value = try JSONValue.parse(#"{"z": 1, "a": [true, null, 2.5, "\u00e9\n"], "m": {"y": -3}}"#)
        #expect(value.serialized() == #"{"z":1,"a":[true,null,2.5,"é\n"],"m":{"y":-3}}"#)
        #expect(throws: JSONParseError.self) { try JSONValue.parse("{\"a\": }") }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(String(repeating: "[", count: 500)) }
    }
}

/// A finished item is freed: the renewal closure a request stage leaves on the item must not keep the item alive
/// (a strong capture made every file of a batch stay in memory until the run ended).
@Suite struct RequestRenewalTests {
    @Test func renewalClosureDoesNotKeepItsItemAlive() throws {
        let yaml = """
            version: 1
            name: t
            stages:
              - request: { url: "https://api.test/x", json: { a: 1 }, as: ticket }

            """
        let pipeline = try Pipeline.parse(yaml: yaml, environment: [:])
        let stage = try #require(pipeline.stages.first?.stage as? RequestStage)
        weak var released: Item?
        do {
            let item = Item(path: "/data/in/a.m4a", relativePath: "a.m4a", size: 1)
            stage.registerRenewal(item, context: StageContext(settings: RunSettings(), resultName: "ticket"))
            #expect(item.rerun["ticket"] != nil)
            released = item
        }
        #expect(released == nil)
    }
}
