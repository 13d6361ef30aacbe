import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// The server's answer survives HTTP/2 (issue 19, §8): a server that answers before it has read the whole body ends
/// its stream early, and libcurl then reports an error ("HTTP/2 stream 1 was not closed cleanly …") although the
/// status and body arrived. That answer is what the report says and what the retry policy acts on, over HTTP/2 as
/// over HTTP/1.1. Against hypercorn (Tests/Fixtures/h2server.py) over TLS with a test CA.
@Suite(.serialized) struct HTTP2AnswerTests {
    /// Uploads one 3 MB file with `method: put` to `path` on `server`, over `version`; returns the run's failure and
    /// the number of requests the server saw on that path.
    func uploadFailure(to path: String, version: String = "2", extra: String = ", max_attempts: 3", name: String) throws
        -> (
            failure: [String: Any], requests: Int
        )
    {
        let server = try H2Server.shared()
        let folder = try TemporaryFolder(name)
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/u/a.mov", size: 3_000_000)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: h2
            stages:
              - upload: { method: put, url: "\(server.base)\(path)", ca_bundle: "\(server.caBundle)", http_version: "\(version)", backoff: 50ms\(extra) }

            """)
        let (result, reports) = try runIngestWithReport(
            pipeline, [folder.path + "/in"], in: folder.path, environment: environmentWithoutProxies())
        #expect(result.status == 1, "\(result.stderr)")
        let failure = try #require((reports.first?["failures"] as? [[String: Any]])?.first, "\(reports)")
        let count = try server.requests()[(path.split(separator: "?").first).map(String.init) ?? path] ?? 0
        return (failure, count)
    }

    /// A 413 or 403 answered after 100 bytes of a 3 MB PUT over HTTP/2: the report gives the status and the server's
    /// words, and it is not retried. (Not over HTTP/1.1 here: hypercorn's HTTP/1.1 resets a connection whose body it
    /// left unread, sometimes before curl has read the answer.)
    @Test(arguments: [(413, "413 Content Too Large"), (403, "403 Forbidden")])
    func anEarlyRefusalIsTheServersAnswer(_ status: (code: Int, line: String)) throws {
        let version = "2"
        let (failure, requests) = try uploadFailure(to: "/early/\(status.code)?after=100", name: "h2-\(status.code)")
        #expect(failure["rule"] as? String == "status", "HTTP/\(version): \(failure)")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains("answered \(status.line): too large, go away"), "HTTP/\(version): \(message)")
        #expect(!message.contains("attempts"), "HTTP/\(version): \(message)")
        #expect(requests == 1, "HTTP/\(version): \(requests) requests")
    }

    /// A 200 after 100 bytes of a 3 MB PUT is the partial-delivery failure with its byte counts, whatever ended the
    /// stream afterwards (hypercorn drops the connection, or stops reading the rest until the stall timeout). (Over
    /// HTTP/1.1 hypercorn reads the rest and drops it: the client cannot tell that from a delivery.)
    @Test func aSuccessBeforeTheWholeBodyIsAPartialDelivery() throws {
        let version = "2"
        let (failure, _) = try uploadFailure(
            to: "/early/200?after=100", extra: ", stall_timeout: 2s, max_attempts: 1", name: "h2-200")
        #expect(failure["rule"] as? String == "network", "HTTP/\(version): \(failure)")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains("the server answered 200 after "), "HTTP/\(version): \(message)")
        #expect(message.contains(" of 3,000,000 bytes were sent"), "HTTP/\(version): \(message)")
    }
}
