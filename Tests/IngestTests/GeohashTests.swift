import Testing
@testable import Ingest
@Test func placeholder() { #expect(Geohash.encode(latitude: 57.64911, longitude: 10.40744, precision: 11) == "u4pruydqqvj") }
