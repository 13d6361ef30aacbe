import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestStages

/// The one decoding pass records every stage item (`StageEntry`) whether or not it decoded, and what runs after it
/// (leaving out a stage for an unset variable, lint) reads those records.
@Suite struct StageEntryTests {
    @Test func everyItemIsRecordedWithItsFirstError() {
        let yaml = """
            version: 1
            name: x
            stages:
              - probe:
              - validate: { max_bytes: lots, sniff: maybe, as: checked }
              - nosuch: { a: 1 }
            """
        let decoded = Pipeline.decodeFile(yaml: yaml, source: "test.yml", environment: [:])
        #expect(decoded.pipeline == nil)
        #expect(decoded.stages.map(\.name) == ["probe", "validate", "nosuch"])
        #expect(decoded.stages.map { $0.configured != nil } == [true, false, false])
        // An options mapping reports its first error; the file reports one per stage item.
        #expect(decoded.stages[1].errors.map(\.message).count == 1)
        #expect(decoded.stages[1].errors.first?.message.hasPrefix("validate: expected a size") == true)
        #expect(decoded.stages[1].writtenResultName == "checked")
        #expect(decoded.stages[1].optionNames == ["max_bytes", "sniff", "as"])
        #expect(decoded.stages[2].descriptor == nil)
        #expect(decoded.errors.map { $0.location?.line ?? 0 } == [5, 6])
    }

    @Test func leavingOutAStageStillChecksTheFile() throws {
        // Offline, the upload fails only for its unset bucket and is left out; the file's own check then runs.
        let yaml = """
            version: 1
            name: " "
            stages:
              - probe:
              - upload: { method: s3, endpoint: "https://s3.example.com", bucket: "${S3_BUCKET:?}" }
            """
        let decoded = Pipeline.decodeFile(yaml: yaml, source: "test.yml", environment: [:], offline: true)
        #expect(decoded.errors.map(\.description) == ["test.yml:1:1: error: 'name' must not be empty"])
        #expect(decoded.stages.map(\.isLeftOut) == [false, true])
        let fixed = yaml.replacingOccurrences(of: "name: \" \"", with: "name: y")
        let pipeline = try Pipeline.parse(yaml: fixed, source: "test.yml", environment: [:], offline: true)
        #expect(pipeline.stages.map(\.name) == ["probe"])
    }
}
