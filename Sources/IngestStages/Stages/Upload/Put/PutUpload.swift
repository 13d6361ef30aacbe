import Foundation
import IngestCore
import IngestFiles
import IngestNetwork
import IngestTemplates
import NativeCurl

/// `method: put`: the file as the body of a PUT to a signed URL (`{{ticket.upload_url}}`), with the sniffed (or
/// given) Content-Type unless a header sets it.
struct PutUpload: SignedURLUpload {
    static let name = "put"
    static let summary = "PUT to a signed URL"

    struct Options: StageOptions, Sendable {
        var signed = SignedURLOptions()
        init() {}
        static var fields: [OptionField<Options>] { SignedURLOptions.fields(\.signed, expect: "[200]") }
        func validate(at node: ConfigNode) throws { try signed.validate(at: node) }
    }

    let signed: SignedURLOptions
    let limiter: RateLimiter?

    init(options: Options, stage: UploadStage.Options) {
        signed = options.signed
        limiter = signed.network.rate.map(RateLimiter.init(rate:))
    }

    func request(
        for item: Item, url: String, headers: [(name: String, value: String)], contentType: String,
        scope: TemplateScope
    ) throws -> (request: HTTPRequest, expected: [Int]) {
        var request = HTTPRequest(
            method: "PUT", url: url, headers: headers, body: HTTPBody(file: try item.sendableSlice()))
        if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            request.headers.append(("Content-Type", contentType))
        }
        return (request, signed.expect ?? [200])
    }
}
