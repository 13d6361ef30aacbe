import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore

/// Sizes and durations as users write them, both parsed directly and through a pipeline file.
@Suite struct QuantitiesTests {
    @Test(
        arguments: [
            ("100MB", 100_000_000), ("100MiB", 104_857_600), ("104857600", 104_857_600), ("1.5GB", 1_500_000_000),
            ("1KB", 1000), ("1kB", 1000), ("1KiB", 1024), ("512B", 512), ("2M", 2_097_152), ("100_000", 100_000),
            (" 10 MB ", 10_000_000), ("0", 0),
        ] as [(String, Int64)])
    func sizes(text: String, bytes: Int64) throws {
        #expect(ByteSize.parse(text) == ByteSize(bytes: bytes))
    }

    @Test(arguments: ["", "MB", "-1", "-1MB", "100XB", "ten", "1e400GB", "1.2.3MB"])
    func notSizes(text: String) {
        #expect(ByteSize.parse(text) == nil)
    }

    @Test(
        arguments: [
            ("90s", 90), ("1h30m", 5400), ("3600", 3600), ("500ms", 0.5), ("1.5s", 1.5), ("2min", 120), ("1d", 86400),
            ("0.25", 0.25), ("1h0m1s", 3601),
        ] as [(String, Double)])
    func durations(text: String, seconds: Double) {
        #expect(DurationValue.parse(text) == DurationValue(seconds: seconds))
    }

    @Test(arguments: ["", "s", "90x", "1h30", "-5s", "ten seconds", "1..5s"])
    func notDurations(text: String) {
        #expect(DurationValue.parse(text) == nil)
    }

    @Test func descriptions() {
        #expect(ByteSize(bytes: 104_857_600).description == "100 MiB")
        #expect(ByteSize(bytes: 1536).description == "1.5 KiB")
        #expect(ByteSize(bytes: 5).description == "5 B")
        #expect(DurationValue(seconds: 5400).description == "5400s")
        #expect(DurationValue(seconds: 0.5).description == "0.5s")
    }

    @Test func quantitiesInAPipelineFile() throws {
        let yaml = """
            version: 1
            name: q
            stages:
              - validate: { min_bytes: 104857600, max_bytes: 100MiB, duration: { min: 500ms, max: 1h30m } }
              - validate: { max_bytes: 100MB, duration: { min: 90s, max: 3600 } }
            """
        let pipeline = try Pipeline.parse(yaml: yaml, environment: [:])
        let first = try validateOptions(pipeline.stages[0])
        #expect(first.minBytes?.bytes == 104_857_600)
        #expect(first.maxBytes?.bytes == 104_857_600)
        #expect(first.duration?.min?.seconds == 0.5)
        #expect(first.duration?.max?.seconds == 5400)
        let second = try validateOptions(pipeline.stages[1])
        #expect(second.maxBytes?.bytes == 100_000_000)
        #expect(second.duration?.min?.seconds == 90)
        #expect(second.duration?.max?.seconds == 3600)
    }

    @Test func badQuantitiesPointAtTheValue() {
        let yaml = """
            version: 1
            name: q
            stages:
              - validate: { max_bytes: 100XB }
              - validate: { duration: { max: 1 hour } }
            """
        let errors = pipelineErrors(yaml)
        #expect(
            errors.map(\.description) == [
                "test.yml:4:28: error: validate: expected a size such as 104857600, 100MB or 100MiB, found '100XB'; max_bytes must be between 0 B and 1024 TiB",
                "test.yml:5:34: error: validate: expected a duration such as 3600, 90s or 1h30m, found '1 hour'; max must be between 0s and 366d",
            ])
    }
}
