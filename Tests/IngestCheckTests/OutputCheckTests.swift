import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore

/// Named outputs are checked when the pipeline loads: what an upload sends and what `{{outputs.…}}` reads must be
/// made by an earlier stage.
@Suite struct OutputCheckTests {
    func yaml(_ stages: String) -> String {
        "version: 1\nname: outputs\nstages:\n" + stages
    }

    @Test func outputsMadeEarlierLoad() {
        let errors = pipelineErrors(
            yaml(
                """
                  - poster: { at: 1s, output: poster }
                  - thumbnails: { count: 12, output: sheet }
                  - video: { output: proxy, max_width: 1280 }
                  - upload: { method: local, dir: /tmp/out, output: poster, key: "p/{{outputs.poster.size}}.jpg" }
                  - upload: { method: local, dir: /tmp/out, output: proxy }
                  - upload: { method: local, dir: /tmp/out, key: "{{outputs.sheet.name}}" }

                """))
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func anUnknownOutputIsALoadError() {
        let errors = pipelineErrors(
            yaml(
                """
                  - poster: { output: poster }
                  - upload: { method: local, dir: /tmp/out, output: proxy }
                  - upload: { method: local, dir: /tmp/out, key: "{{outputs.postr.size}}" }
                  - upload: { method: local, dir: /tmp/out, key: "{{outputs.poster.bytes}}" }

                """))
        let messages = errors.map(\.message)
        #expect(messages.contains { $0.contains("upload output 'proxy': no earlier stage makes it") }, "\(messages)")
        #expect(
            errors.contains {
                $0.message.contains("no earlier stage makes output 'postr'") && $0.suggestion == "outputs.poster.size"
            })
        #expect(messages.contains { $0.contains("{{outputs.poster.bytes}}: outputs offer") }, "\(messages)")
    }

    @Test func anOutputUsedBeforeItIsMadeOrMadeTwiceIsALoadError() {
        let errors = pipelineErrors(
            yaml(
                """
                  - upload: { method: local, dir: /tmp/out, output: poster }
                  - poster: {}
                  - thumbnails: { output: poster }
                  - video: { output: "2bad" }

                """))
        let messages = errors.map(\.message)
        #expect(messages.contains { $0.contains("upload output 'poster': no earlier stage makes it") }, "\(messages)")
        #expect(messages.contains { $0.contains("output 'poster' is made by two stages") }, "\(messages)")
        #expect(messages.contains { $0.contains("output must be a name of letters") }, "\(messages)")
    }
}
