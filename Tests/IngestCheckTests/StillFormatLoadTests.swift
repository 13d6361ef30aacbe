import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore

/// A still's `format` is checked when the pipeline loads: an unknown one is an error at the key's line, naming the
/// formats there are.
@Suite struct StillFormatLoadTests {
    @Test func anUnknownFormatIsAnErrorAtItsLine() {
        let errors = pipelineErrors(
            """
            version: 1
            name: stills
            stages:
              - poster:
                  at: 1s
                  format: gif
              - thumbnails: { format: webp }

            """)
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.location?.line == 6, "\(errors)")
        #expect(errors.first?.message.contains("jpeg, webp") == true, "\(errors)")
        #expect(pipelineErrors("version: 1\nname: s\nstages:\n  - poster: { format: webp, quality: 0.9 }\n").isEmpty)
    }
}
