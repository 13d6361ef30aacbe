import Foundation
import IngestCore
import IngestFiles
import IngestNetwork
import IngestTemplates
import NativeCurl

/// `method: s3-post`: an S3 presigned POST — the ticket's form fields in their order, then the file as the last
/// part of a multipart/form-data body (`MultipartForm`). The POST policy is checked before a byte is sent.
struct S3PostUpload: SignedURLUpload {
    static let name = "s3-post"
    static let summary = "S3 presigned POST form"

    struct Options: StageOptions, Sendable {
        var signed = SignedURLOptions()
        var formFields: TemplateValue?
        init() {}

        static var fields: [OptionField<Options>] {
            var declared = SignedURLOptions.fields(\Options.signed, expect: "[204] or success_action_status")
            let form = OptionField<Options>(
                "fields", \.formFields,
                doc:
                    "The ticket's form fields, sent in order before the file (`{{ticket.upload_fields}}` or a mapping).",
                required: true)
            declared.insert(form, at: 1)
            return declared
        }

        func validate(at node: ConfigNode) throws { try signed.validate(at: node) }
    }

    let signed: SignedURLOptions
    let formFields: TemplateValue?
    let limiter: RateLimiter?

    init(options: Options, stage: UploadStage.Options) {
        signed = options.signed
        formFields = options.formFields
        limiter = signed.network.rate.map(RateLimiter.init(rate:))
    }

    func request(
        for item: Item, url: String, headers: [(name: String, value: String)], contentType: String,
        scope: TemplateScope
    ) throws -> (request: HTTPRequest, expected: [Int]) {
        let fields = try Self.formFields(
            Rehearsal.placeholderFields(try (formFields ?? .object([])).render(scope), item: item),
            stage: UploadStage.name)
        let form = MultipartForm(
            fields: fields, fileName: item.artifactName,
            fileType: fields.first {
                $0.0.caseInsensitiveCompare("Content-Type") == .orderedSame
            }?.1 ?? contentType)
        var request = HTTPRequest(
            method: "POST", url: url, headers: headers,
            body: HTTPBody(head: form.head, file: try item.sendableSlice(), tail: form.tail))
        request.headers.append(("Content-Type", "multipart/form-data; boundary=\(form.boundary)"))
        let declared = fields.first { $0.0 == "success_action_status" }.flatMap { Int($0.1) }
        let expected = signed.expect ?? [declared ?? 204]
        try Self.checkPolicy(
            fields, fileName: item.artifactName, fileSize: request.body?.file?.size ?? 0, now: item.timings.clock.date)
        return (request, expected)
    }

    /// S3 would refuse the form after the whole file arrived; the policy says so up front. A file that breaks a
    /// condition (size range, key prefix, content type, expiry at `now`, the run's clock) fails here, naming it, and
    /// nothing is sent.
    static func checkPolicy(_ fields: [(String, String)], fileName: String, fileSize: Int64, now: Date) throws {
        guard fields.contains(where: { $0.0.lowercased() == "policy" }) else { return }
        var map: [String: String] = [:]
        for (name, value) in fields { map[name] = value }
        let policy: S3PostPolicy
        do {
            policy = try S3PostPolicy(decodingFields: map)
        } catch {
            throw ItemFailed(stage: UploadStage.name, rule: .policy, message: "\(error)")
        }
        let key = map.first { $0.key.lowercased() == "key" }?.value.replacingOccurrences(
            of: "${filename}", with: fileName)
        let violations = policy.check(fileSize: fileSize, key: key, now: now)
        guard violations.isEmpty else {
            throw ItemFailed(
                violations.map {
                    RuleFailure(
                        stage: UploadStage.name, rule: .policy($0.rule),
                        message: "the S3 POST policy refuses the file: \($0)")
                })
        }
    }

    /// The rendered `fields` as ordered name/value text pairs; anything but an object of scalars fails the file.
    static func formFields(_ value: JSONValue, stage: String) throws -> [(String, String)] {
        guard case .object(let object) = value else {
            throw ItemFailed(
                stage: stage, rule: .fields,
                message: "fields must be an object of form fields, found \(value.serialized().prefix(60))")
        }
        return try object.pairs.map { name, value in
            switch value {
            case .object, .array, .null:
                throw ItemFailed(stage: stage, rule: .fields, message: "form field '\(name)' is not text")
            default: return (name, value.stringValue ?? "")
            }
        }
    }
}
