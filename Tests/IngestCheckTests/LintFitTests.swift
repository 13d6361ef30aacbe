import Foundation
import Testing

@testable import IngestCheck
@testable import IngestConfig
@testable import IngestCore
@testable import IngestStages

/// `lint` on a size rule placed where `fit` cannot help: a `validate` `max_bytes` before the stage that fits.
@Suite struct LintFitTests {
    @Test func aSizeRuleBeforeFitWarnsAtTheRule() {
        let yaml = """
            version: 1
            name: x
            stages:
              - validate: { extensions: [mov], max_bytes: 100MB }
              - video: { fit: { max_bytes: 100MB } }
            """
        let issues = Pipeline.lint(yaml: yaml, source: "l.yml", environment: [:])
        #expect(issues.map(\.severity) == [.warning], "\(issues)")
        #expect(issues.first?.location?.line == 4)
        #expect(issues.first?.description.contains("before video: { fit } (line 5)") == true, "\(issues)")
    }

    @Test func aSizeRuleAfterFitOrWithoutFitIsQuiet() {
        for stages in [
            "  - validate: { extensions: [mov] }\n  - video: { fit: { max_bytes: 100MB } }\n  - validate: { max_bytes: 100MB }",
            "  - validate: { max_bytes: 100MB }\n  - video: { crf: 23 }",
            "  - validate: { max_bytes: 25MB }\n  - probe:",
            // A fitted proxy: the limit is the proxy's, the file is sent as it is.
            "  - validate: { max_bytes: 20GB }\n  - video: { output: proxy, fit: { max_bytes: 100MB } }",
        ] {
            let issues = Pipeline.lint(
                yaml: "version: 1\nname: x\nstages:\n\(stages)\n", source: "l.yml", environment: [:])
            #expect(issues.isEmpty, "\(stages): \(issues)")
        }
    }

    @Test func audioFitCountsToo() {
        let yaml =
            "version: 1\nname: x\nstages:\n  - validate: { max_bytes: 25MB }\n  - audio: { fit: { max_bytes: 25MB } }\n"
        let issues = Pipeline.lint(yaml: yaml, source: "l.yml", environment: [:])
        #expect(issues.first?.description.contains("before audio: { fit }") == true, "\(issues)")
    }
}
