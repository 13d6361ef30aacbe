import Testing

@testable import IngestStages

@Suite struct GeohashTests {
    @Test(arguments: [
        (57.64911, 10.40744, 11, "u4pruydqqvj"),  // the example in Niemeyer's description
        (0.0, 0.0, 6, "s00000"),
        (-90.0, -180.0, 6, "000000"),
        (59.3293, 18.0686, 6, "u6sce0"),  // Stockholm, the Samples' ISO 6709 location
        (37.7749, -122.4194, 5, "9q8yy"),
    ])
    func encodes(latitude: Double, longitude: Double, precision: Int, expected: String) {
        #expect(Geohash.encode(latitude: latitude, longitude: longitude, precision: precision) == expected)
    }
}
