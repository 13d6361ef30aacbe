import Foundation
import IngestConfig
import IngestCore

extension PipelineTestFile {
    /// A test file rather than a pipeline: named `NAME.test.yml` (`.test.yaml`), as `ingest test` finds them, or a
    /// mapping with `cases` and no `stages`. `ingest lint pipelines/*.yml` meets both kinds.
    static func isTestFile(path: String) -> Bool {
        let name = (path as NSString).lastPathComponent.lowercased()
        if name.hasSuffix(".test.yml") || name.hasSuffix(".test.yaml") { return true }
        guard let yaml = try? PipelineFileReader.read(path: path),
            let document = try? ConfigLoader.compose(yaml: yaml, source: path, environment: [:]),
            case .mapping(let pairs) = document.root.kind
        else { return false }
        let keys = pairs.compactMap(\.key.scalar)
        return keys.contains("cases") && !keys.contains("stages")
    }

    /// `ingest lint` of a test file: checked as `ingest test` loads it (its spec, `TestFileSpec`, which
    /// pipelines/test.schema.json is written from: known keys, each case's input and expectations), and the
    /// pipeline it tests must exist. Empty when it is fine.
    static func lint(path: String) -> [PipelineLintIssue] {
        let file: PipelineTestFile
        do {
            file = try load(path: path)
        } catch let error as PipelineFileError {
            return [PipelineLintIssue(error: error)]
        } catch let errors as PipelineFileErrors {
            return errors.errors.map(PipelineLintIssue.init(error:))
        } catch {
            return [PipelineLintIssue(severity: .error, location: nil, message: "\(path): \(error)")]
        }
        guard FileManager.default.fileExists(atPath: file.pipeline) else {
            return [
                PipelineLintIssue(
                    severity: .error, location: nil,
                    message: "\(path): the pipeline it tests, \(file.pipeline), does not exist")
            ]
        }
        return []
    }
}
