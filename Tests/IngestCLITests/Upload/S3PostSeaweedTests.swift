import Foundation
import Testing

@testable import IngestCore
@testable import IngestNetwork
@testable import IngestTestSupport

/// `upload: { method: s3-post }` against a real S3 implementation (SeaweedFS from the s3 branch's harness): the
/// form built from a presigned POST is accepted and the object reads back byte-identical.
@Suite(.serialized) struct S3PostSeaweedTests {
    @Test func presignedPostFormIsAcceptedByARealS3() throws {
        let s3 = try SeaweedFS.shared()
        try s3.createBucket("ingest-post")
        let presigner = S3Presigner(
            credentials: AWSCredentials(accessKeyID: s3.accessKey, secretAccessKey: s3.secretKey), region: s3.region,
            endpoint: try S3Endpoint(region: s3.region, url: s3.endpoint, pathStyle: true))
        let post = try presigner.presignedPost(
            bucket: "ingest-post", key: .startsWith("audio/", keyField: "audio/${filename}"),
            contentType: .exactly("audio/mp4"), contentLengthRange: 1...(10 << 20), successActionStatus: 201,
            expires: 600)
        let folder = try TemporaryFolder("seaweed-post")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/in/visit \(UUID().uuidString.prefix(6)).m4a", size: 1_234_567)
        // `$$` keeps `${filename}` for S3 (the pipeline loader would read `${…}` as an environment variable).
        let fields = post.fields.map { name, value in
            "        \(yamlQuoted(name)): \(yamlQuoted(value.replacingOccurrences(of: "$", with: "$$")))"
        }.joined(separator: "\n")
        let pipeline = """
            version: 1
            name: seaweed-post
            stages:
              - upload:
                  method: s3-post
                  url: \(post.url)
                  fields:
            \(fields)
                  as: stored

            """
        let file = try folder.file("p.yml", pipeline)
        let result = try runCommand(
            TestPaths.ingest, ["run", file, folder.path + "/in"], environment: environmentWithoutProxies())
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)\n\(s3.logTail())")
        let name = (path as NSString).lastPathComponent
        let copy = folder.path + "/readback"
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name
        let read = try s3.curl(["-o", copy, "\(s3.endpoint)/ingest-post/audio/\(encoded)"])
        #expect(read.status == 200)
        #expect(try sha256sum(copy) == (try sha256sum(path)))
    }

    func yamlQuoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
