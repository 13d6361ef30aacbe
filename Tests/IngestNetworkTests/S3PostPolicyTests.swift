import Foundation
import Testing

@testable import IngestNetwork

/// Building presigned POST forms and reading a backend's ticket (`upload_fields`) back to check a file before
/// any request is made.
@Suite struct S3PostPolicyTests {
    static let credentials = AWSCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG")
    static let date = try! SigV4Signer.date(fromTimestamp: "20241219T143022Z")
    static var presigner: S3Presigner {
        S3Presigner(credentials: credentials, region: "us-east-1", endpoint: try! S3Endpoint(region: "us-east-1"))
    }

    /// A ticket shaped like the vet-audio seed's `upload_fields`.
    static func seedTicket() throws -> [String: String] {
        let post = try presigner.presignedPost(
            bucket: "helppetai-visit-recordings", key: .exactly("visit-recordings/2024/12/19/pet-a/unique-id.m4a"),
            contentType: .exactly("audio/m4a"), contentLengthRange: 1...104_857_600, expires: 3600, date: date)
        return Dictionary(uniqueKeysWithValues: post.fields)
    }

    @Test func buildsTheFormAndSignsThePolicy() throws {
        let post = try Self.presigner.presignedPost(
            bucket: "bkt", key: .startsWith("uploads/", keyField: "uploads/${filename}"),
            contentType: .startsWith("audio/"), contentLengthRange: 1...100, successActionStatus: 201, expires: 600,
            date: Self.date)
        #expect(post.url == "https://bkt.s3.us-east-1.amazonaws.com/")
        #expect(
            post.fields.map(\.0) == [
                "key", "success_action_status", "x-amz-algorithm", "x-amz-credential", "x-amz-date", "policy",
                "x-amz-signature",
            ])
        #expect(post.fields[0].1 == "uploads/${filename}")
        #expect(post.fields[3].1 == "AKIDEXAMPLE/20241219/us-east-1/s3/aws4_request")
        #expect(
            post.policy.json
                == #"{"expiration":"2024-12-19T14:40:22Z","conditions":[{"bucket":"bkt"},"#
                + #"["starts-with","$key","uploads/"],["starts-with","$Content-Type","audio/"],"#
                + #"["content-length-range",1,100],{"success_action_status":"201"},"#
                + #"{"x-amz-algorithm":"AWS4-HMAC-SHA256"},"#
                + #"{"x-amz-credential":"AKIDEXAMPLE/20241219/us-east-1/s3/aws4_request"},"#
                + #"{"x-amz-date":"20241219T143022Z"}]}"#)
        let fields = Dictionary(uniqueKeysWithValues: post.fields)
        #expect(fields["policy"] == Data(post.policy.json.utf8).base64EncodedString())
        // The signature is HMAC-SHA256 of the base64 policy with the day's signing key.
        #expect(fields["x-amz-signature"] == Self.presigner.signer.sign(fields["policy"]!, date: Self.date))
        #expect(fields["x-amz-signature"]?.count == 64)
    }

    @Test func sessionTokenGoesIntoFieldsAndConditions() throws {
        let presigner = S3Presigner(
            credentials: AWSCredentials(accessKeyID: "AKID", secretAccessKey: "s", sessionToken: "TOKEN"),
            region: "us-east-1", endpoint: try S3Endpoint(region: "us-east-1"))
        let post = try presigner.presignedPost(bucket: "bkt", key: .exactly("k"), expires: 60, date: Self.date)
        #expect(post.fields.contains { $0 == ("x-amz-security-token", "TOKEN") })
        #expect(post.policy.conditions.contains(.equals("x-amz-security-token", "TOKEN")))
    }

    @Test func readsATicketBack() throws {
        let fields = try Self.seedTicket()
        let policy = try S3PostPolicy(decodingFields: fields)
        #expect(policy.expiration == Self.date.addingTimeInterval(3600))
        #expect(policy.contentLengthRange == 1...104_857_600)
        #expect(policy.successActionStatus == 204)
        #expect(policy.conditions.first == .equals("bucket", "helppetai-visit-recordings"))
        #expect(policy.check(fileSize: 2_048_576, now: Self.date).isEmpty)
    }

    @Test func namesTheViolatedCondition() throws {
        let policy = try S3PostPolicy(decodingFields: try Self.seedTicket())
        #expect(
            policy.check(fileSize: 104_857_601, now: Self.date).map(\.description) == [
                "content-length-range 1..104857600: file is 104857601 bytes"
            ])
        #expect(policy.check(fileSize: 0, now: Self.date).map(\.rule) == ["content-length-range"])
        #expect(
            policy.check(fileSize: 10, contentType: "audio/mp4", now: Self.date).map(\.description) == [
                #"eq $Content-Type "audio/m4a": Content-Type is "audio/mp4""#
            ])
        #expect(
            policy.check(fileSize: 10, key: "other.m4a", now: Self.date).map(\.description) == [
                #"eq $key "visit-recordings/2024/12/19/pet-a/unique-id.m4a": key is "other.m4a""#
            ])
        #expect(
            policy.check(fileSize: 10, now: Self.date.addingTimeInterval(3600)).map(\.description) == [
                "policy expired at 2024-12-19T15:30:22Z"
            ])
    }

    @Test func startsWithAndBrokenTickets() throws {
        let post = try Self.presigner.presignedPost(
            bucket: "bkt", key: .startsWith("uploads/", keyField: "uploads/${filename}"), expires: 60, date: Self.date)
        let policy = try S3PostPolicy(decodingFields: Dictionary(uniqueKeysWithValues: post.fields))
        #expect(policy.check(fileSize: 1, key: "uploads/a.m4a", now: Self.date).isEmpty)
        #expect(
            policy.check(fileSize: 1, key: "elsewhere/a.m4a", now: Self.date).map(\.description) == [
                #"starts-with $key "uploads/": key is "elsewhere/a.m4a""#
            ])

        // A ticket whose fields disagree with its own policy, or carry fields the policy does not allow.
        var fields = Dictionary(uniqueKeysWithValues: post.fields)
        fields["x-amz-date"] = "20250101T000000Z"
        fields["acl"] = "public-read"
        let broken = try S3PostPolicy(decodingFields: fields)
        #expect(
            broken.check(fileSize: 1, key: "uploads/a", now: Self.date).map(\.description) == [
                #"eq $x-amz-date "20241219T143022Z": x-amz-date is "20250101T000000Z""#,
                "field acl is not allowed by any condition of the policy",
            ])
        fields.removeValue(forKey: "x-amz-date")
        #expect(
            try S3PostPolicy(decodingFields: fields).check(fileSize: 1, key: "uploads/a", now: Self.date).first?
                .description == #"eq $x-amz-date "20241219T143022Z": the form has no x-amz-date field"#)
    }

    @Test func policyDocumentsFromElsewhere() throws {
        // boto3 style: fractional seconds, "eq" arrays, string numbers.
        let json = #"""
            {"expiration": "2030-01-01T00:00:00.000Z", "conditions": [["eq", "$key", "a"],
             ["content-length-range", "10", 20], {"acl": "private"}]}
            """#
        let policy = try S3PostPolicy(json: Data(json.utf8))
        #expect(policy.conditions == [.equals("key", "a"), .contentLengthRange(10, 20), .equals("acl", "private")])
        #expect(policy.check(fileSize: 21, key: "a", now: Self.date).map(\.rule) == ["content-length-range"])
    }

    @Test func unreadablePoliciesSayWhy() throws {
        func reason(_ fields: [String: String]) -> String {
            do {
                _ = try S3PostPolicy(decodingFields: fields)
                return "no error"
            } catch { return "\(error)" }
        }
        #expect(reason(["key": "a"]) == "invalid S3 POST policy: the fields have no 'policy' (found: key)")
        #expect(reason(["policy": "%%%"]) == "invalid S3 POST policy: 'policy' is not base64")
        let noExpiry = Data(#"{"conditions": []}"#.utf8).base64EncodedString()
        #expect(reason(["policy": noExpiry]) == "invalid S3 POST policy: the policy has no 'expiration'")
        let badCondition = Data(#"{"expiration": "2030-01-01T00:00:00Z", "conditions": [["in", "$key", "a"]]}"#.utf8)
        #expect(
            reason(["policy": badCondition.base64EncodedString()])
                == "invalid S3 POST policy: condition 1: unknown operation 'in'")
    }

    @Test func refusesImpossibleForms() {
        #expect(throws: S3Error.self) {
            try Self.presigner.presignedPost(bucket: "b", key: .exactly("k"), successActionStatus: 302, expires: 60)
        }
        #expect(throws: S3Error.invalidExpiry(700_000)) {
            try Self.presigner.presignedPost(bucket: "b", key: .exactly("k"), expires: 700_000)
        }
    }
}
