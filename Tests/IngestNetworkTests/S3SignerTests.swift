import Foundation
import Testing

@testable import IngestNetwork

/// What S3 does differently from the general algorithm (checked by SigV4SuiteTests), plus two of the worked
/// examples published in the S3 API reference ("Signature Calculations for the Authorization Header" and
/// "Authenticating Requests: Using Query Parameters"), whose values are reproduced here exactly.
@Suite struct S3SignerTests {
    /// The S3 documentation's example key pair (not a real key).
    static let docCredentials = AWSCredentials(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let docDate = try! SigV4Signer.date(fromTimestamp: "20130524T000000Z")

    @Test func documentationExamplePresignedGET() throws {
        let signer = SigV4Signer.s3(credentials: Self.docCredentials, region: "us-east-1")
        let request = try SigV4Request(
            method: "GET", url: "https://examplebucket.s3.amazonaws.com/test.txt", payload: .unsigned)
        let signed = signer.presign(request, date: Self.docDate, expires: 86400)
        #expect(
            signed.canonicalRequest == """
                GET
                /test.txt
                X-Amz-Algorithm=AWS4-HMAC-SHA256&\
                X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&\
                X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host
                host:examplebucket.s3.amazonaws.com

                host
                UNSIGNED-PAYLOAD
                """)
        #expect(signed.stringToSign.hasSuffix("\n3bfa292879f6447bbcda7001decf97f4a54dc650c8942174ae0a9121cf58ad04"))
        #expect(signed.signature == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")

        // The same through the presigner, which builds the URL itself.
        let presigner = S3Presigner(
            credentials: Self.docCredentials, region: "us-east-1",
            endpoint: S3Endpoint(scheme: "https", host: "s3.amazonaws.com", pathStyle: false))
        let url = try presigner.presignedURL(
            method: "GET", location: S3Location(bucket: "examplebucket", key: "test.txt"), expires: 86400,
            date: Self.docDate)
        #expect(url.hasPrefix("https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&"))
        #expect(url.hasSuffix("&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"))
    }

    @Test func documentationExampleHeaderSignedGET() throws {
        let signer = SigV4Signer.s3(credentials: Self.docCredentials, region: "us-east-1")
        let request = try SigV4Request(
            method: "GET", url: "https://examplebucket.s3.amazonaws.com/test.txt", headers: [("Range", "bytes=0-9")],
            payload: .empty)
        let signed = signer.signHeaders(request, date: Self.docDate)
        #expect(
            signed.canonicalRequest == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        #expect(signed.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(
            signed.headers.last?.1
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    /// S3 keys are not paths: `.`/`..` segments and double slashes are part of the key and must be signed as sent.
    @Test func s3DoesNotNormalisePaths() throws {
        let request = try SigV4Request(method: "GET", url: "https://b.s3.amazonaws.com/a/./b/../c//d")
        let s3 = SigV4Signer.s3(credentials: Self.docCredentials, region: "us-east-1")
        #expect(
            s3.signHeaders(request, date: Self.docDate).canonicalRequest.split(separator: "\n")[1] == "/a/./b/../c//d")
        let general = SigV4Signer(credentials: Self.docCredentials, region: "us-east-1", service: "service")
        #expect(general.signHeaders(request, date: Self.docDate).canonicalRequest.split(separator: "\n")[1] == "/a/c/d")
    }

    /// S3 signs the path encoded once; other services encode the sent path again.
    @Test func s3EncodesThePathOnce() throws {
        let endpoint = S3Endpoint(scheme: "https", host: "s3.amazonaws.com", pathStyle: true)
        let url = endpoint.objectURL(S3Location(bucket: "b", key: "dir/my file%+ሴ.txt"))
        #expect(url == "https://s3.amazonaws.com/b/dir/my%20file%25%2B%E1%88%B4.txt")
        let request = try SigV4Request(method: "PUT", url: url, payload: .unsigned)
        let s3 = SigV4Signer.s3(credentials: Self.docCredentials, region: "us-east-1")
        #expect(
            s3.presign(request, date: Self.docDate, expires: 60).canonicalRequest.split(separator: "\n")[1]
                == "/b/dir/my%20file%25%2B%E1%88%B4.txt")
        let general = SigV4Signer(credentials: Self.docCredentials, region: "us-east-1", service: "service")
        #expect(
            general.presign(request, date: Self.docDate, expires: 60).canonicalRequest.split(separator: "\n")[1]
                == "/b/dir/my%2520file%2525%252B%25E1%2588%25B4.txt")
    }

    @Test func unsignedPayloadAndCallerSuppliedHash() throws {
        let s3 = SigV4Signer.s3(credentials: Self.docCredentials, region: "us-east-1")
        let presigned = s3.presign(
            try SigV4Request(method: "PUT", url: "https://b.s3.amazonaws.com/k", payload: .unsigned),
            date: Self.docDate,
            expires: 60)
        #expect(presigned.canonicalRequest.hasSuffix("\nUNSIGNED-PAYLOAD"))
        #expect(!presigned.query.contains("content-sha256"))

        // A streamed file is hashed by the caller; the signer signs that hash and sends it in x-amz-content-sha256.
        let hash = String(repeating: "ab", count: 32)
        let signed = s3.signHeaders(
            try SigV4Request(method: "PUT", url: "https://b.s3.amazonaws.com/k", payload: .sha256(hash)),
            date: Self.docDate)
        #expect(signed.canonicalRequest.hasSuffix("\n\(hash)"))
        #expect(signed.canonicalRequest.contains("\nx-amz-content-sha256:\(hash)\n"))
        #expect(signed.headers.map(\.0) == ["X-Amz-Date", "x-amz-content-sha256", "Authorization"])
        #expect(
            SigV4Payload.hashing(Data("abc".utf8)).value
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sessionTokenIsSignedInHeadersAndQuery() throws {
        let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret", sessionToken: "tok/en+=")
        let s3 = SigV4Signer.s3(credentials: credentials, region: "eu-west-1")
        let request = try SigV4Request(method: "GET", url: "https://b.s3.eu-west-1.amazonaws.com/k")
        let headers = s3.signHeaders(request, date: Self.docDate)
        #expect(headers.headers.first! == ("X-Amz-Security-Token", "tok/en+="))
        #expect(headers.canonicalRequest.contains("\nx-amz-security-token:tok/en+=\n"))
        let query = s3.presign(request, date: Self.docDate, expires: 60)
        #expect(query.canonicalRequest.contains("&X-Amz-Security-Token=tok%2Fen%2B%3D&"))
        #expect(query.query.contains("&X-Amz-Security-Token=tok%2Fen%2B%3D&X-Amz-Signature="))
    }

    /// Re-signing replaces the old authentication instead of signing it.
    @Test func signingTwiceReplacesTheOldSignature() throws {
        let s3 = SigV4Signer.s3(credentials: Self.docCredentials, region: "us-east-1")
        let first = s3.presign(
            try SigV4Request(method: "GET", url: "https://b.s3.amazonaws.com/k?versionId=3"), date: Self.docDate,
            expires: 60)
        let again = s3.presign(
            try SigV4Request(method: "GET", url: "https://b.s3.amazonaws.com/k?\(first.query)"), date: Self.docDate,
            expires: 60)
        #expect(again.query == first.query)
        #expect(first.query.hasPrefix("versionId=3&X-Amz-Algorithm="))
    }

    @Test func credentialsFromTheEnvironment() throws {
        let full = try AWSCredentials.fromEnvironment([
            "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_SESSION_TOKEN": "t0k3n",
        ])
        #expect(full == AWSCredentials(accessKeyID: "AKID", secretAccessKey: "s3cr3t", sessionToken: "t0k3n"))
        #expect(throws: S3Error.missingEnvironment(["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"])) {
            try AWSCredentials.fromEnvironment([:])
        }
        #expect(throws: S3Error.missingEnvironment(["AWS_SECRET_ACCESS_KEY"])) {
            try AWSCredentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": ""])
        }
        #expect(
            S3Error.missingEnvironment(["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]).description
                == "missing AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                + "(and AWS_SESSION_TOKEN for temporary credentials)")
        #expect(try AWSCredentials.region(from: ["AWS_DEFAULT_REGION": "eu-west-1"]) == "eu-west-1")
        #expect(throws: S3Error.missingEnvironment(["AWS_REGION"])) { try AWSCredentials.region(from: [:]) }
    }

    /// Printing credentials in any way never shows the secret or the token.
    @Test func credentialsNeverPrintTheirSecrets() {
        let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "s3cr3t", sessionToken: "t0k3n")
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in ["\(credentials)", String(reflecting: credentials), dumped, "\([credentials])"] {
            #expect(text.contains("AKID"))
            #expect(!text.contains("s3cr3t"), "\(text)")
            #expect(!text.contains("t0k3n"), "\(text)")
        }
    }

    @Test func timestamps() throws {
        let date = try SigV4Signer.date(fromTimestamp: "20241219T143022Z")
        #expect(SigV4Signer.timestamp(for: date) == "20241219T143022Z")
        for bad in ["2024-12-19T14:30:22Z", "20241219T143022", "20241319T143022Z", "20240230T000000Z", ""] {
            #expect(throws: S3Error.invalidDate(bad)) { try SigV4Signer.date(fromTimestamp: bad) }
        }
    }

    @Test func locationsAndEndpoints() throws {
        #expect(
            try S3Location(parsing: "s3://my-bucket/a/b c.m4a") == S3Location(bucket: "my-bucket", key: "a/b c.m4a"))
        #expect(try S3Location(parsing: "s3://my-bucket") == S3Location(bucket: "my-bucket", key: ""))
        #expect(throws: S3Error.self) { try S3Location(parsing: "https://my-bucket/a") }
        #expect(throws: S3Error.self) { try S3Location(parsing: "s3://My_Bucket/a") }
        #expect(throws: S3Error.self) { try S3Location(parsing: "s3:///a") }

        let aws = try S3Endpoint(region: "eu-west-1")
        #expect(aws.objectURL(S3Location(bucket: "b1", key: "k")) == "https://b1.s3.eu-west-1.amazonaws.com/k")
        // Dotted buckets over HTTPS and IP addresses use path style.
        #expect(aws.objectURL(S3Location(bucket: "b.1", key: "k")) == "https://s3.eu-west-1.amazonaws.com/b.1/k")
        let local = try S3Endpoint(region: "us-east-1", url: "http://127.0.0.1:9000")
        #expect(local.objectURL(S3Location(bucket: "b1", key: "k")) == "http://127.0.0.1:9000/b1/k")
        let minio = try S3Endpoint(region: "us-east-1", url: "https://minio.example.com:443", pathStyle: true)
        #expect(minio.bucketURL("b1") == "https://minio.example.com/b1/")
        #expect(throws: S3Error.self) { try S3Endpoint(region: "us-east-1", url: "http://host/prefix") }
        #expect(throws: S3Error.self) { try S3Endpoint(region: "us-east-1", url: "ftp://host") }
    }

    @Test func expiryIsBounded() throws {
        let presigner = S3Presigner(
            credentials: Self.docCredentials, region: "us-east-1", endpoint: try S3Endpoint(region: "us-east-1"))
        let location = S3Location(bucket: "b1", key: "k")
        #expect(throws: S3Error.invalidExpiry(0)) {
            try presigner.presignedURL(method: "PUT", location: location, expires: 0)
        }
        #expect(throws: S3Error.invalidExpiry(604_801)) {
            try presigner.presignedURL(method: "PUT", location: location, expires: 604_801)
        }
    }
}
