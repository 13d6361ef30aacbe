import Foundation
import Testing

@testable import IngestCore
@testable import IngestNetwork
@testable import IngestTestSupport

/// AWS's SigV4 test suite (from awslabs/aws-c-auth; a copy with its licence is in
/// `Tests/Fixtures/sigv4-test-suite/v4`, so a clone alone passes): for every case, header signing and query signing
/// must produce the published canonical request, string to sign, signature and signed request byte for byte. Every one of the 38 cases applies; none is skipped.
@Suite struct SigV4SuiteTests {
    static let suiteDirectory = TestPaths.root + "/Tests/Fixtures/sigv4-test-suite/v4"

    /// The case folders, read at test time. A missing suite yields one bogus name so the test fails loudly instead
    /// of passing with nothing checked.
    static var caseNames: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: suiteDirectory))?.filter {
            FileManager.default.fileExists(atPath: "\(suiteDirectory)/\($0)/context.json")
        }
        guard let names, !names.isEmpty else { return ["<no cases found in \(suiteDirectory)>"] }
        return names.sorted()
    }

    /// One case: its context and its request, taken apart the way a client would send it.
    struct Case {
        let name: String
        let directory: String
        let credentials: AWSCredentials
        let region: String
        let service: String
        let date: Date
        let expires: Int
        let normalize: Bool
        let signBody: Bool
        let omitSessionToken: Bool
        let method: String
        let target: String
        /// Header lines as written (folded lines kept), for rebuilding the signed request.
        let rawHeaderLines: [String]
        /// Name/value pairs with folded lines joined by a space.
        let headers: [(String, String)]
        let body: String

        init(_ name: String) throws {
            self.name = name
            directory = "\(SigV4SuiteTests.suiteDirectory)/\(name)"
            let contextData = try Data(contentsOf: URL(fileURLWithPath: directory + "/context.json"))
            let context = try #require(JSONSerialization.jsonObject(with: contextData) as? [String: Any])
            let credentials = try #require(context["credentials"] as? [String: Any])
            self.credentials = AWSCredentials(
                accessKeyID: try #require(credentials["access_key_id"] as? String),
                secretAccessKey: try #require(credentials["secret_access_key"] as? String),
                sessionToken: credentials["token"] as? String)
            region = try #require(context["region"] as? String)
            service = try #require(context["service"] as? String)
            let timestamp = try #require(context["timestamp"] as? String)
            date = try #require(ISO8601DateFormatter().date(from: timestamp))
            expires = try #require(context["expiration_in_seconds"] as? Int)
            normalize = try #require(context["normalize"] as? Bool)
            signBody = try #require(context["sign_body"] as? Bool)
            omitSessionToken = context["omit_session_token"] as? Bool ?? false

            let request = try String(contentsOfFile: directory + "/request.txt", encoding: .utf8)
            let headEnd = request.range(of: "\n\n")
            let head = headEnd.map { String(request[..<$0.lowerBound]) } ?? request
            body = headEnd.map { String(request[$0.upperBound...]) } ?? ""
            var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if lines.last == "" { lines.removeLast() }
            let requestLine = lines.removeFirst()
            // The target may contain spaces (get-space-*): the method ends at the first space, the version starts
            // at the last.
            let firstSpace = try #require(requestLine.firstIndex(of: " "))
            let lastSpace = try #require(requestLine.lastIndex(of: " "))
            method = String(requestLine[..<firstSpace])
            target = String(requestLine[requestLine.index(after: firstSpace)..<lastSpace])
            rawHeaderLines = lines
            var headers: [(String, String)] = []
            for line in lines {
                if line.first == " " || line.first == "\t", !headers.isEmpty {
                    headers[headers.count - 1].1 += " " + line
                } else {
                    let colon = try #require(line.firstIndex(of: ":"), "header line without a colon: \(line)")
                    headers.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
                }
            }
            self.headers = headers
        }

        var path: String { target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target }
        var query: String { target.firstIndex(of: "?").map { String(target[target.index(after: $0)...]) } ?? "" }

        func signer(headerMode: Bool) -> SigV4Signer {
            SigV4Signer(
                credentials: credentials, region: region, service: service,
                options: .init(
                    normalizePath: normalize, pathEncoding: .encodeAgain,
                    addContentSHA256Header: headerMode && signBody, omitSessionTokenFromSignature: omitSessionToken))
        }

        var request: SigV4Request {
            SigV4Request(method: method, path: path, query: query, headers: headers, payload: .hashing(Data(body.utf8)))
        }

        func expected(_ file: String) throws -> String {
            try String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)
        }
    }

    @Test func theWholeSuiteIsThere() {
        #expect(Self.caseNames.count == 38, "expected AWS's 38 cases in \(Self.suiteDirectory)")
    }

    @Test(arguments: caseNames) func headerSigning(_ name: String) throws {
        let testCase = try Case(name)
        let signed = testCase.signer(headerMode: true).signHeaders(testCase.request, date: testCase.date)
        #expect(signed.canonicalRequest == (try testCase.expected("header-canonical-request.txt")))
        #expect(signed.stringToSign == (try testCase.expected("header-string-to-sign.txt")))
        #expect(signed.signature == (try testCase.expected("header-signature.txt")))
        // The signed request: the request as written plus the added fields, in the order the suite adds them.
        var text = "\(testCase.method) \(testCase.target) HTTP/1.1\n"
        for line in testCase.rawHeaderLines { text += line + "\n" }
        for (name, value) in signed.headers { text += "\(name):\(value)\n" }
        text += "\n" + testCase.body
        #expect(text == (try testCase.expected("header-signed-request.txt")))
    }

    @Test(arguments: caseNames) func querySigning(_ name: String) throws {
        let testCase = try Case(name)
        let signed = testCase.signer(headerMode: false).presign(
            testCase.request, date: testCase.date, expires: testCase.expires)
        #expect(signed.canonicalRequest == (try testCase.expected("query-canonical-request.txt")))
        #expect(signed.stringToSign == (try testCase.expected("query-string-to-sign.txt")))
        #expect(signed.signature == (try testCase.expected("query-signature.txt")))
        var text = "\(testCase.method) \(testCase.path)?\(signed.query) HTTP/1.1\n"
        for line in testCase.rawHeaderLines { text += line + "\n" }
        text += "\n" + testCase.body
        #expect(text == (try testCase.expected("query-signed-request.txt")))
    }
}
