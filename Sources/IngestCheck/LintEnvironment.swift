import Foundation
import IngestConfig
import IngestCore
import IngestStages

/// Lint's warnings about what a pipeline reads from the environment besides its `${VAR}`s (those are warned about
/// as the file is decoded): the AWS credentials and region a `method: s3` upload signs with (read as `S3Uploader`
/// reads them), and `{{env.NAME}}` templates. Each names the variable, the stage, and which commands need it:
/// `ingest run` and `ingest run --dry-run` (a rehearsal still signs what it shows); `ingest validate` sends nothing
/// and needs none of them.
struct EnvironmentLint {
    /// Every stage item of the file, decoded or left out (a stage left out for an unset `${S3_BUCKET}` still needs
    /// its credentials).
    let stages: [StageEntry]
    let environment: [String: String]

    func issues(strict: Bool) -> [PipelineLintIssue] {
        var issues: [PipelineLintIssue] = []
        for entry in stages {
            let location = entry.item.location
            for message in s3Needs(entry) + templateNeeds(entry) {
                issues.append(
                    PipelineLintIssue(severity: strict ? .error : .warning, location: location, message: message))
            }
        }
        return issues
    }

    private func isSet(_ name: String) -> Bool { !(environment[name] ?? "").isEmpty }

    private static let needers = "'ingest run' and 'ingest run --dry-run' stop before the first file"

    /// What a `method: s3` upload needs that is not set: `S3UploadOptions.resolve` reads the keys from the
    /// environment unless both are in the pipeline, and the region unless `region` or `endpoint` is given.
    private func s3Needs(_ entry: StageEntry) -> [String] {
        guard entry.name == UploadStage.name, entry.optionNode("method")?.scalar == "s3" else { return [] }
        let written = Set(entry.optionNames)
        var needs: [String] = []
        let keys = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"].filter { !isSet($0) }
        if !keys.isEmpty && !(written.contains("access_key_id") && written.contains("secret_access_key")) {
            needs.append(
                "environment variable\(keys.count == 1 ? "" : "s") \(keys.map { "'\($0)'" }.joined(separator: " and ")) "
                    + "\(keys.count == 1 ? "is" : "are") not set: upload (method: s3) "
                    + "signs its requests with the AWS credentials, so \(Self.needers) (set them, or give "
                    + "access_key_id and secret_access_key; 'ingest validate' needs none)")
        }
        if !isSet("AWS_REGION") && !isSet("AWS_DEFAULT_REGION") && !written.contains("region")
            && !written.contains("endpoint")
        {
            needs.append(
                "environment variable 'AWS_REGION' is not set (nor AWS_DEFAULT_REGION): upload (method: s3) signs for a region and sends "
                    + "to its endpoint, so \(Self.needers) (set it, or give region or endpoint; 'ingest validate' "
                    + "needs none)")
        }
        return needs
    }

    /// `{{env.NAME}}` in the stage's options whose NAME is unset: rendering it fails each file that reaches it.
    private func templateNeeds(_ entry: StageEntry) -> [String] {
        guard let options = entry.options else { return [] }
        var seen = Set<String>()
        return TemplateCheck.variables(in: options, lines: []).compactMap { variable, _ in
            guard variable.hasPrefix("env.") else { return nil }
            let name = String(variable.dropFirst(4))
            guard !name.isEmpty, !isSet(name), seen.insert(name).inserted else { return nil }
            return
                "environment variable '\(name)' is not set: {{env.\(name)}} reads it, so \(entry.name ?? "the stage") "
                + "fails each file that reaches it"
        }
    }
}
