import IngestCore
import IngestTemplates

/// `geohash`: turns the probed location into a geohash fact (seed 004 keys its data by a 6-character geohash),
/// for key templates (`{{geohash}}`) and payloads.
package struct GeohashStage: Stage {
    /// What becomes of a file without a location.
    package enum MissingPolicy: String, OptionEnum, Sendable {
        /// It goes on without a `geohash` fact.
        case pass
        /// It stops here and is reported as skipped (seed 004 keeps only located media), not as a failure.
        case skip
        /// It fails (`required: true`).
        case fail
    }

    package struct Options: StageOptions, Sendable {
        package var precision = 6
        package var required = false
        package var onMissing: MissingPolicy?
        package init() {}
        package static var fields: [OptionField<Options>] {
            [
                OptionField("precision", \.precision, range: 1...12, doc: "Characters of geohash, 1–12.", default: "6"),
                OptionField(
                    "required", \.required, doc: "Fail files that have no location (the same as `on_missing: fail`).",
                    default: "false"),
                OptionField(
                    "on_missing", \.onMissing,
                    doc:
                        "A file without a location: `pass` (on without a geohash), `skip` (reported as skipped; later "
                        + "stages do not run) or `fail`.",
                    default: "pass (fail with required: true)"),
            ]
        }
        package func validate(at node: ConfigNode) throws {
            if !(1...12).contains(precision) { throw node.error("precision must be 1…12, found \(precision)") }
            if required, let onMissing, onMissing != .fail {
                throw node.error(
                    "required: true fails files without a location, but on_missing says \(onMissing.rawValue)")
            }
        }

        var missing: MissingPolicy { onMissing ?? (required ? .fail : .pass) }
    }

    package static let name = "geohash"
    /// `{{geohash}}`: a string, so no fields.
    package static let templateOffer: TemplateOffer? = TemplateOffer(name: name, fields: [])
    package static let summary = "Adds the geohash of the file's location (from probe) as the fact `geohash`."

    let options: Options
    package init(options: Options) throws { self.options = options }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        let probe = try context.probe(item, stage: Self.name)
        guard let location = probe.location else {
            switch options.missing {
            case .pass: return .proceed
            case .skip: return .skip(reason: "no location metadata (geohash on_missing: skip)")
            case .fail:
                throw ItemFailed(
                    stage: Self.name, rule: .required, message: "the file has no location metadata",
                    expected: "a location", actual: "none")
            }
        }
        let hash = Geohash.encode(
            latitude: location.latitude, longitude: location.longitude, precision: options.precision)
        item.facts[context.resultName ?? "geohash"] = .string(hash)
        return .proceed
    }
}

/// Gustavo Niemeyer's geohash: interleaved longitude/latitude bisection bits, 5 per base-32 character.
package enum Geohash {
    static let alphabet = Array("0123456789bcdefghjkmnpqrstuvwxyz")

    package static func encode(latitude: Double, longitude: Double, precision: Int) -> String {
        var latitudeRange = (-90.0, 90.0)
        var longitudeRange = (-180.0, 180.0)
        var hash = ""
        var bits = 0
        var bitCount = 0
        var evenBit = true
        while hash.count < precision {
            // Bits alternate, longitude first: each halves its range toward the value.
            if evenBit {
                bits = bits << 1 | halve(&longitudeRange, toward: longitude)
            } else {
                bits = bits << 1 | halve(&latitudeRange, toward: latitude)
            }
            evenBit.toggle()
            bitCount += 1
            if bitCount == 5 {
                hash.append(alphabet[bits])
                bits = 0
                bitCount = 0
            }
        }
        return hash
    }

    /// Halves `range` toward `value`: 1 when the value is in the upper half, 0 in the lower.
    private static func halve(_ range: inout (Double, Double), toward value: Double) -> Int {
        let mid = (range.0 + range.1) / 2
        if value >= mid {
            range.0 = mid
            return 1
        }
        range.1 = mid
        return 0
    }
}
