import Foundation
import IngestNative
import Testing

@testable import Ingest
@testable import IngestConfig
@testable import IngestCore
@testable import IngestStages

/// A finished item is freed: the renewal closure a request stage leaves on the item must not keep the item alive
/// (a strong capture made every file of a batch stay in memory until the run ended).
@Suite struct RequestRenewalTests {
    @Test func renewalClosureDoesNotKeepItsItemAlive() throws {
        let yaml = """
            version: 1
            name: t
            stages:
              - request: { url: "https://api.test/x", json: { a: 1 }, as: ticket }

            """
        let pipeline = try Pipeline.parse(yaml: yaml, environment: [:])
        let stage = try #require(pipeline.stages.first?.stage as? RequestStage)
        weak var released: Item?
        do {
            let item = Item(path: "/data/in/a.m4a", relativePath: "a.m4a", size: 1)
            stage.registerRenewal(item, context: StageContext(settings: RunSettings(), resultName: "ticket"))
            #expect(item.rerun["ticket"] != nil)
            released = item
        }
        #expect(released == nil)
    }
}
