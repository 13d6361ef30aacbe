import Foundation
import Logging
import Testing

@testable import IngestCore
@testable import IngestNetwork
@testable import IngestRun
@testable import IngestStages
@testable import IngestTestSupport

/// Secrets never reach logs or reports: signatures, session tokens, bearer tokens, Authorization values.
@Suite struct RedactionTests {
    @Test func presignedURLs() {
        let url =
            "https://b.s3.amazonaws.com/k%20x?versionId=3&X-Amz-Algorithm=AWS4-HMAC-SHA256"
            + "&X-Amz-Credential=AKIDEXAMPLE%2F20241219%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20241219T143022Z"
            + "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=FQoG%2Fsecret"
            + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
        #expect(
            Redaction.url(url)
                == "https://b.s3.amazonaws.com/k%20x?versionId=3&X-Amz-Algorithm=AWS4-HMAC-SHA256"
                + "&X-Amz-Credential=AKIDEXAMPLE%2F20241219%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20241219T143022Z"
                + "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED")
        // SigV2 and Google-style URLs, lower case names, fragments.
        #expect(
            Redaction.url("https://h/k?AWSAccessKeyId=AKID&Expires=1&Signature=abc%2B#frag")
                == "https://h/k?AWSAccessKeyId=AKID&Expires=1&Signature=REDACTED#frag")
        #expect(Redaction.url("https://h/k?x-amz-signature=abc") == "https://h/k?x-amz-signature=REDACTED")
        #expect(Redaction.url("https://h/plain") == "https://h/plain")
    }

    @Test func headers() {
        let headers: [(String, String)] = [
            ("Authorization", "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKID/20241219/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, "
                    + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
            ),
            ("Proxy-Authorization", "Basic dXNlcjpwYXNz"),
            ("X-Amz-Security-Token", "FQoGZXIvYXdzE"),
            ("Content-Type", "audio/m4a"),
            ("Cookie", "session=abc"),
        ]
        let redacted = Redaction.headers(headers)
        #expect(
            redacted.map(\.1) == [
                "Bearer REDACTED",
                "AWS4-HMAC-SHA256 Credential=AKID/20241219/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, "
                    + "Signature=REDACTED",
                "Basic REDACTED", "REDACTED", "audio/m4a", "REDACTED",
            ])
        #expect(Redaction.headers(["Authorization": "Token abc"]) == ["Authorization": "Token REDACTED"])
        #expect(Redaction.headerValue(name: "Authorization", value: "opaque") == "REDACTED")
    }

    @Test func postFields() throws {
        let plainPolicy = Data(#"{"expiration":"2030-01-01T00:00:00Z","conditions":[]}"#.utf8).base64EncodedString()
        let tokenPolicy = Data(#"{"conditions":[{"x-amz-security-token":"FQo"}]}"#.utf8).base64EncodedString()
        let fields = [
            "key": "a.m4a", "policy": plainPolicy, "x-amz-signature": "abc123", "x-amz-security-token": "FQo",
            "x-amz-credential": "AKID/20241219/us-east-1/s3/aws4_request",
        ]
        // The policy is redacted too, as the README promises (with a session token in it, it is a secret itself).
        #expect(
            Redaction.fields(fields) == [
                "key": "a.m4a", "policy": "REDACTED", "x-amz-signature": "REDACTED",
                "x-amz-security-token": "REDACTED",
                "x-amz-credential": "AKID/20241219/us-east-1/s3/aws4_request",
            ])
        #expect(Redaction.fieldValue(name: "policy", value: tokenPolicy) == "REDACTED")
        #expect(Redaction.fields([("X-Amz-Signature", "abc")]).map(\.1) == ["REDACTED"])
    }

    @Test func freeText() {
        let line =
            #"PUT https://b/k?X-Amz-Date=1&X-Amz-Signature=deadbeef failed; Authorization: Bearer abc.def-ghi "#
            + #"fields {"x-amz-signature": "cafe", "key": "k"} X-Amz-Security-Token: FQoG/+="#
        #expect(
            Redaction.text(line)
                == #"PUT https://b/k?X-Amz-Date=1&X-Amz-Signature=REDACTED failed; Authorization: Bearer REDACTED "#
                + #"fields {"x-amz-signature": "REDACTED", "key": "k"} X-Amz-Security-Token: REDACTED"#)
        #expect(Redaction.text("nothing secret here") == "nothing secret here")
    }

    /// Google Cloud Storage / Firebase (v4 and v2) and Azure SAS signed URLs, and passwords in URLs: the
    /// signature goes, the key id and scope stay.
    @Test func otherProvidersSignedURLs() {
        let gcs =
            "https://storage.googleapis.com/b/o.mov?X-Goog-Algorithm=GOOG4-RSA-SHA256"
            + "&X-Goog-Credential=sa%40p.iam.gserviceaccount.com%2F20261124%2Fauto%2Fstorage%2Fgoog4_request"
            + "&X-Goog-Date=20261124T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature=0a1b2c3d"
        let gcsRedacted = gcs.replacingOccurrences(of: "X-Goog-Signature=0a1b2c3d", with: "X-Goog-Signature=REDACTED")
        #expect(Redaction.url(gcs) == gcsRedacted)
        #expect(Redaction.text("PUT \(gcs) failed") == "PUT \(gcsRedacted) failed")
        let v2 = "https://storage.googleapis.com/b/o?GoogleAccessId=sa%40p&Expires=1&Signature=Zm9v%2Bb%2Fa%3D"
        #expect(
            Redaction.url(v2) == "https://storage.googleapis.com/b/o?GoogleAccessId=sa%40p&Expires=1&Signature=REDACTED"
        )
        let azure =
            "https://a.blob.core.windows.net/c/o?sv=2022-11-02&se=2026-11-24T10%3A00%3A00Z&sr=b&sp=cw&sig=QUJD%2Bx%3D"
        let azureRedacted =
            "https://a.blob.core.windows.net/c/o?sv=2022-11-02&se=2026-11-24T10%3A00%3A00Z&sr=b&sp=cw&sig=REDACTED"
        #expect(Redaction.url(azure) == azureRedacted)
        #expect(Redaction.text(azure) == azureRedacted)
        // In JSON text, `\/` escapes do not end the value early.
        #expect(
            Redaction.text(#"{"u":"https:\/\/h\/o?sig=ab\/cd+e=&sp=r"}"#)
                == #"{"u":"https:\/\/h\/o?sig=REDACTED&sp=r"}"#)
        #expect(Redaction.url("https://user:pa55@h.example/x?y=1") == "https://user:REDACTED@h.example/x?y=1")
        #expect(Redaction.text("GET ftp://me:pw@h/f failed") == "GET ftp://me:REDACTED@h/f failed")
        #expect(Redaction.text("postgres://me:p@ss@db/x") == "postgres://me:REDACTED@db/x")
        #expect(Redaction.url("postgres://me:p@ss@db/x") == "postgres://me:REDACTED@db/x")
        #expect(Redaction.text("http://127.0.0.1:8080/a@b") == "http://127.0.0.1:8080/a@b")
        #expect(
            Redaction.json(.object(["upload_url": .string(azure), "token": .string("t0k"), "n": .int(1)]))
                == .object(["upload_url": .string(azureRedacted), "token": .string("REDACTED"), "n": .int(1)]))
    }

    /// Any Authorization scheme is hidden in text; redacting twice changes nothing more.
    @Test func authorizationInTextAndIdempotence() {
        #expect(Redaction.text("Authorization: Token abc123") == "Authorization: Token REDACTED")
        #expect(Redaction.text(#"{"authorization": "Bearer abc"}"#) == #"{"authorization": "Bearer REDACTED"}"#)
        #expect(Redaction.text("authorization failed for user x") == "authorization failed for user x")
        let line = "PUT https://u:p@h/k?X-Goog-Signature=ab&sig=cd with Authorization: Bearer x.y, Cookie: s=1"
        let once = Redaction.text(line)
        #expect(
            once
                == "PUT https://u:REDACTED@h/k?X-Goog-Signature=REDACTED&sig=REDACTED with Authorization: "
                + "Bearer REDACTED, Cookie: REDACTED"
        )
        #expect(Redaction.text(once) == once)
    }

    /// Every secret the presigner puts into a URL or form is gone after redaction.
    @Test func presignerOutputIsCovered() throws {
        let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "sec", sessionToken: "SESSIONTOKEN")
        let presigner = S3Presigner(
            credentials: credentials, region: "us-east-1", endpoint: try S3Endpoint(region: "us-east-1"))
        let url = try presigner.presignedURL(method: "PUT", location: S3Location(bucket: "bkt", key: "k"), expires: 60)
        let signature = String(url.suffix(64))
        #expect(!Redaction.url(url).contains(signature))
        #expect(!Redaction.url(url).contains("SESSIONTOKEN"))
        #expect(!Redaction.text(url).contains(signature))
        let post = try presigner.presignedPost(bucket: "bkt", key: .exactly("k"), expires: 60)
        let redacted = Redaction.fields(post.fields)
        #expect(!redacted.contains { $0.1.contains("SESSIONTOKEN") })
        #expect(!redacted.contains { $0.1 == post.fields.last!.1 })
        #expect(!Redaction.text(post.json.serialized()).contains(post.fields.last!.1))
    }

    /// A file named `q?x=1&X-Amz-Signature=evil.mov`: its `name=value` text is redacted in the `-v` line, and the
    /// `: ` that ends the file's place stays (it was swallowed as part of the value).
    @Test func aFileNameWithASecretNameKeepsTheLineSeparator() {
        let line = RunLogHandler.textLine(
            message: "PUT http://h/b/q%3Fx%3D1%26X-Amz-Signature%3Devil.mov?sig=1 → 200 OK",
            fields: ["stage": "upload", "file": "q?x=1&X-Amz-Signature=evil.mov"])
        #expect(
            Redaction.text(line)
                == "ingest: upload q?x=1&X-Amz-Signature=REDACTED: PUT "
                + "http://h/b/q%3Fx%3D1%26X-Amz-Signature%3Devil.mov?sig=REDACTED → 200 OK")
        #expect(Redaction.text("token=abc: next") == "token=REDACTED: next")
        #expect(Redaction.text("sig=a:b:c") == "sig=REDACTED")
    }

    /// `Redaction.text` runs a rule only on text holding the characters that rule needs: each rule still applies on
    /// the smallest text it redacts, text with none of them comes back as it was, and text past ASCII (which ICU's
    /// case folding may match in ways a byte check would not) goes through every rule.
    @Test func eachRuleStillAppliesWhereItsCharactersAre() {
        let cases: [(String, String)] = [
            ("https://u:pw@h/x", "https://u:REDACTED@h/x"),
            ("sig=abc", "sig=REDACTED"),
            (#"{"token": "abc"}"#, #"{"token": "REDACTED"}"#),
            ("Cookie: a", "Cookie: REDACTED"),
            ("Authorization=Token abc", "Authorization=Token REDACTED"),
            ("a BEARER abc", "a BEARER REDACTED"),
            ("é basic abc", "é basic REDACTED"),
            ("already done (journal)", "already done (journal)"),
            ("media/d0001/f000100.txt", "media/d0001/f000100.txt"),
        ]
        for (text, redacted) in cases { #expect(Redaction.text(text) == redacted, "\(text)") }
        // ICU matches `(?i)basic` on the long s (ſ); such text is not judged by its bytes.
        #expect(Redaction.text("baſic abc") == "baſic REDACTED")
    }
}
