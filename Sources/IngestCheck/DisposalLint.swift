import IngestConfig
import IngestCore
import IngestStages

/// What `ingest lint` says of `on_success` / `on_failure`: a pipeline that moves or deletes its input files says so,
/// and under which command, so nobody is surprised by an emptied inbox; one whose `on_success` can never apply (no
/// upload to deliver the files) is warned about.
enum DisposalLint {
    /// The commands that never move or delete a file, whatever the pipeline says.
    static let neverUnder = "never under `ingest validate`, `--dry-run` or `ingest test`"

    /// A warning for an `on_success` without any upload; with `notes`, a note for each of `on_success` and
    /// `on_failure` saying what it does and when. `stages` are the stages as written (one lint left out for an unset
    /// variable still counts); `yaml` is the file's text, for the keys' lines.
    static func issues(_ pipeline: Pipeline, stages: [StageEntry], yaml: String, notes: Bool) -> [PipelineLintIssue] {
        var issues: [PipelineLintIssue] = []
        let uploads = stages.filter { $0.name == UploadStage.name }
        if let success = pipeline.disposal.onSuccess {
            let location = keyLocation("on_success", yaml: yaml, source: pipeline.source)
            if uploads.isEmpty {
                issues.append(
                    PipelineLintIssue(
                        severity: .warning, location: location,
                        message: "on_success never applies: a file is moved or deleted only once an upload delivered "
                            + "it, and this pipeline has no upload stage"))
            } else if notes {
                var what: String
                switch success {
                case .delete: what = "on_success deletes each input file"
                case .moveTo(let folder): what = "on_success moves each input file to \(folder)"
                }
                what += " once an upload delivered it, under `ingest run` and `ingest watch` (\(neverUnder))"
                if uploads.allSatisfy({ $0.optionNames.contains("when") }) {
                    what += "; a file no upload's `when:` takes is kept"
                }
                issues.append(PipelineLintIssue(severity: .note, location: location, message: what))
            }
        }
        if notes, let folder = pipeline.disposal.onFailureMoveTo {
            issues.append(
                PipelineLintIssue(
                    severity: .note, location: keyLocation("on_failure", yaml: yaml, source: pipeline.source),
                    message: "on_failure moves each failed file, its report beside it, to \(folder) under `ingest run` "
                        + "and `ingest watch` (\(neverUnder))"))
        }
        return issues
    }

    /// Where the top-level `key:` is written (its first line starting with it); nil when it is not found that way.
    static func keyLocation(_ key: String, yaml: String, source: String) -> SourceLocation? {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        guard let index = lines.firstIndex(where: { $0.hasPrefix(key + ":") || $0.hasPrefix(key + " :") }) else {
            return nil
        }
        return SourceLocation(file: source, line: index + 1, column: 1)
    }
}
