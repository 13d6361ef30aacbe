import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// Redirects are a decision (`follow_redirects`: `none` by default, `same_origin`, `any`), not something libcurl
/// does on its own: against two real origins (Tests/Fixtures/redirects.py on two ports), a redirect not followed
/// fails naming the status and the target's origin; a followed one to another origin carries none of the configured
/// headers; `-v` and the report name every hop, signed queries redacted.
@Suite(.serialized) struct RedirectTests {
    static let apiKey = "k-SECRET-71c3"
    static let size = 200_000

    /// A pipeline that PUTs each file to `url` with an `X-Api-Key` header (`policy` nil: the default).
    static func putPipeline(_ url: String, policy: String?, extra: String = "") -> String {
        let follow = (policy.map { ", follow_redirects: \($0)" } ?? "") + extra
        return """
            version: 1
            name: redirects
            stages:
              - upload:
                  { method: put, url: "\(url)", headers: { X-Api-Key: "\(apiKey)" }, content_type: video/mov,
                    max_attempts: 1\(follow) }

            """
    }

    /// Runs `pipeline` over one 200,000-byte file with a JSON Lines report (and `arguments`): the result, the
    /// report's text and its one object.
    func run(_ pipeline: String, _ arguments: [String] = ["-q"]) throws -> (CommandResult, String, [String: Any]) {
        let folder = try TemporaryFolder("redirect")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/one.mov", size: Self.size, seed: 7)
        let file = try folder.file("p.yml", pipeline)
        let report = folder.path + "/report.jsonl"
        let result = try runCommand(
            TestPaths.ingest, ["run", file, "in", "--no-journal", "--report", report] + arguments,
            environment: environmentWithoutProxies(), directory: folder.path)
        let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        return (result, text, reportObjects(report).first ?? [:])
    }

    func failure(_ report: [String: Any]) -> (rule: String, message: String) {
        let first = (report["failures"] as? [[String: Any]])?.first ?? [:]
        return ((first["rule"] as? String) ?? "none", (first["message"] as? String) ?? "no failure in \(report)")
    }

    /// The redirects the report lists for the file's first request.
    func hops(_ report: [String: Any]) -> [[String: Any]] {
        let requests = (report["timings"] as? [String: Any])?["requests"] as? [[String: Any]]
        return (requests?.first?["redirects"] as? [[String: Any]]) ?? []
    }

    func header(_ name: String, of request: [String: Any]) -> String? {
        (request["headers"] as? [String: String])?.first { $0.key.lowercased() == name.lowercased() }?.value
    }

    @Test func aRedirectIsNotFollowedByDefault() throws {
        let origins = try RedirectOrigins()
        defer { origins.stop() }
        let (result, _, report) = try run(
            Self.putPipeline(origins.hop(origins.a, 307, to: origins.b + "/sink/x"), policy: nil))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let (rule, message) = failure(report)
        #expect(rule == "redirect", "\(report)")
        #expect(
            message.contains(
                "answered 307 Temporary Redirect to \(origins.b)/sink/x (another origin, \(origins.b)): not followed, "
                    + "as follow_redirects is none"), "\(message)")
        #expect(try origins.sunk(at: "b").isEmpty, "the body went to the other origin")

        // With plain http allowed, libcurl followed it, X-Api-Key included: still not followed.
        let (allowed, _, allowedReport) = try run(
            Self.putPipeline(
                origins.hop(origins.a, 307, to: origins.b + "/sink/x"), policy: nil, extra: ", allow_http: true"))
        #expect(allowed.status == 1, "\(allowed.stdout)\(allowed.stderr)")
        #expect(failure(allowedReport).rule == "redirect", "\(allowedReport)")
        #expect(try origins.sunk(at: "b").isEmpty, "the body and its X-Api-Key went to the other origin")
    }

    @Test func sameOriginFollowsWithinTheOriginAndRefusesAnother() throws {
        let origins = try RedirectOrigins()
        defer { origins.stop() }
        let (same, _, sameReport) = try run(
            Self.putPipeline(origins.hop(origins.a, 308, to: "/sink/same"), policy: "same_origin"))
        #expect(same.status == 0, "\(same.stdout)\(same.stderr)")
        let sunk = try origins.sunk(at: "a")
        #expect(sunk.count == 1)
        #expect(sunk.first?["method"] as? String == "PUT")
        #expect(sunk.first?["bytes"] as? Int == Self.size)
        #expect(sunk.first.flatMap { header("X-Api-Key", of: $0) } == Self.apiKey, "same origin keeps its headers")
        #expect(hops(sameReport).first?["url"] as? String == origins.a + "/sink/same", "\(sameReport)")
        #expect(hops(sameReport).first?["status"] as? Int == 308)

        let (other, _, otherReport) = try run(
            Self.putPipeline(origins.hop(origins.a, 307, to: origins.b + "/sink/x"), policy: "same_origin"))
        #expect(other.status == 1, "\(other.stdout)\(other.stderr)")
        let (rule, message) = failure(otherReport)
        #expect(rule == "redirect")
        #expect(
            message.contains(
                "307 Temporary Redirect to \(origins.b)/sink/x (another origin, \(origins.b)): not "
                    + "followed, as follow_redirects is same_origin"), "\(message)")
        #expect(try origins.sunk(at: "b").isEmpty)
    }

    /// `any` follows to the other origin with the body whole but without `X-Api-Key`; `-v` and the report name the
    /// hop, with the signature in its query redacted.
    @Test func anyFollowsAnotherOriginWithoutTheConfiguredHeaders() throws {
        let origins = try RedirectOrigins()
        defer { origins.stop() }
        let url = origins.hop(origins.a, 307, to: origins.b + "/sink/x") + "&sign=1"
        let (result, reportText, report) = try run(Self.putPipeline(url, policy: "any"), ["-v", "-q"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let sunk = try origins.sunk(at: "b")
        #expect(sunk.count == 1)
        #expect(sunk.first?["method"] as? String == "PUT")
        #expect(sunk.first?["bytes"] as? Int == Self.size)
        #expect(sunk.first.flatMap { header("X-Api-Key", of: $0) } == nil, "the API key went to another origin")
        #expect(sunk.first.flatMap { header("Content-Type", of: $0) } == "video/mov")
        let target = origins.b + "/sink/x?X-Amz-Signature=REDACTED"
        #expect(
            result.stderr.contains(
                "→ 307 Temporary Redirect to \(target) (another origin, \(origins.b)): followed without the "
                    + "configured headers"), "\(result.stderr)")
        #expect(result.stderr.contains("(via 1 redirect to \(target)) → 200"), "\(result.stderr)")
        #expect(hops(report).first?["url"] as? String == target, "\(report)")
        #expect(hops(report).first?["cross_origin"] as? Bool == true)
        let signature = "fixture-sig-5e1f0c2a9b7d"
        #expect(!(result.stdout + result.stderr + reportText).contains(signature), "the signed query leaked")
        #expect(!(result.stdout + result.stderr + reportText).contains(Self.apiKey))
    }

    /// A `request` answered 303 is followed as a GET without its body; a redirect to plain http on another host is
    /// refused naming the redirect (libcurl said only `Protocol "http" not supported or disabled in libcurl`).
    @Test func requestSeeOtherBecomesAGetAndPlainHTTPElsewhereIsRefusedByName() throws {
        let origins = try RedirectOrigins()
        defer { origins.stop() }
        func pipeline(_ url: String) -> String {
            """
            version: 1
            name: redirects
            stages:
              - request:
                  { url: "\(url)", headers: { X-Api-Key: "\(Self.apiKey)" }, json: { a: 1 }, max_attempts: 1,
                    follow_redirects: any, as: answer }

            """
        }
        let (seeOther, _, _) = try run(pipeline(origins.hop(origins.a, 303, to: origins.b + "/sink/answer")))
        #expect(seeOther.status == 0, "\(seeOther.stdout)\(seeOther.stderr)")
        let sunk = try origins.sunk(at: "b")
        #expect(sunk.map { $0["method"] as? String } == ["GET"])
        #expect(sunk.first?["bytes"] as? Int == 0)
        #expect(sunk.first.flatMap { header("X-Api-Key", of: $0) } == nil)

        let (plain, _, report) = try run(pipeline(origins.hop(origins.a, 302, to: "http://example.invalid/sink")))
        #expect(plain.status == 1, "\(plain.stdout)\(plain.stderr)")
        let (rule, message) = failure(report)
        #expect(rule == "redirect", "\(report)")
        #expect(
            message.contains(
                "answered 302 Found to http://example.invalid/sink (another origin, http://example.invalid): not "
                    + "followed, plain http to example.invalid is refused"), "\(message)")
    }

    /// `allow_origins` names another origin the configured headers may go to: `any` follows there with them, and
    /// `same_origin` follows there too; an origin it does not name still gets none.
    @Test func allowOriginsCarriesTheHeadersToTheOriginItNames() throws {
        let origins = try RedirectOrigins()
        defer { origins.stop() }
        let allowB = ", allow_origins: [\"\(origins.b)\"]"
        let url = origins.hop(origins.a, 307, to: origins.b + "/sink/x")
        let (any, _, _) = try run(Self.putPipeline(url, policy: "any", extra: allowB), ["-v", "-q"])
        #expect(any.status == 0, "\(any.stdout)\(any.stderr)")
        #expect(try origins.sunk(at: "b").map { header("X-Api-Key", of: $0) } == [Self.apiKey])
        #expect(any.stderr.contains("followed with the configured headers (allow_origins names it)"), "\(any.stderr)")

        let (same, _, _) = try run(Self.putPipeline(url, policy: "same_origin", extra: allowB))
        #expect(same.status == 0, "\(same.stdout)\(same.stderr)")
        #expect(try origins.sunk(at: "b").map { header("X-Api-Key", of: $0) } == [Self.apiKey, Self.apiKey])

        let allowA = ", allow_origins: [\"\(origins.a)\"]"
        let (other, _, _) = try run(Self.putPipeline(url, policy: "any", extra: allowA))
        #expect(other.status == 0, "\(other.stdout)\(other.stderr)")
        #expect(try origins.sunk(at: "b").count == 3)
        #expect(try origins.sunk(at: "b").last.flatMap { header("X-Api-Key", of: $0) } == nil)
    }
}
