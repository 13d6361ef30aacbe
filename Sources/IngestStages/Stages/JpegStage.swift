import Foundation
import IngestCore
import IngestTemplates
import NativeJPEG
import NativeSystem

/// `jpeg`: re-encodes a JPEG, PNG or HEIC/HEIF photo as the JPEG a backend expects (seed 002 uploads
/// `jpegData(compressionQuality: 0.8)`), upright, optionally downscaled, with metadata per policy. The result is a
/// new file in the work directory that later stages (upload) send; the original is never touched.
package struct JpegStage: Stage {
    /// Encoder quality: the seeds' 0…1 scale (`0.8`) or libjpeg's 1…100 (`80`).
    package struct Quality: OptionValue, Equatable, Sendable {
        /// libjpeg quality 1…100.
        package var libjpeg: Int
        package init(libjpeg: Int) { self.libjpeg = libjpeg }

        package init(from node: ConfigNode) throws {
            let message = "quality must be 0.01…1 (as in jpegData(compressionQuality:)) or 1…100"
            guard let value = node.scalar.flatMap(Double.init), value.isFinite else {
                throw node.error("\(message), found \(node.kindDescription)")
            }
            // Values up to 1 are the 0…1 scale of UIImage.jpegData; above, libjpeg's own scale.
            let scaled = value <= 1 ? (value * 100).rounded() : value
            guard scaled >= 1, scaled <= 100, scaled == scaled.rounded() else {
                throw node.error("\(message), found \(value)")
            }
            libjpeg = Int(scaled)
        }

        package static var jsonSchema: JSONValue { ["type": "number", "exclusiveMinimum": 0, "maximum": 100] }
    }

    /// Output chroma subsampling: `420` (what cjpeg and phones write), `422` or `444`.
    package enum Subsampling: String, OptionValue, CaseIterable, Sendable {
        case s420 = "420"
        case s422 = "422"
        case s444 = "444"

        package init(from node: ConfigNode) throws {
            let text = try String(from: node).replacingOccurrences(of: ":", with: "")
            guard let value = Subsampling(rawValue: text) else {
                throw node.error("subsampling must be 420, 422 or 444, found \(node.kindDescription)")
            }
            self = value
        }

        package static var jsonSchema: JSONValue {
            [
                "anyOf": [
                    ["enum": [420, 422, 444]], ["type": "string", "pattern": "^(420|422|444|4:2:0|4:2:2|4:4:4)$"],
                ]
            ]
        }

        var native: ChromaSubsampling {
            switch self {
            case .s420: .s420
            case .s422: .s422
            case .s444: .s444
            }
        }
    }

    /// What happens to EXIF, XMP, IPTC and comments. The ICC profile is always kept: without it colours change.
    package enum MetadataPolicy: String, OptionEnum, Sendable {
        /// Remove EXIF, XMP, IPTC and comments (GPS included).
        case strip
        /// Keep them (EXIF rebuilt with orientation 1 when the pixels were turned or resized).
        case keep
        /// Keep EXIF without its GPS IFD, IPTC and comments; XMP is dropped since it can repeat the location.
        case keepExceptGPS = "keep-except-gps"
    }

    package enum Filter: String, OptionEnum, Sendable {
        case lanczos, area
    }

    package struct Options: StageOptions, Sendable {
        package var quality = Quality(libjpeg: 80)
        package var subsampling = Subsampling.s420
        package var progressive = false
        package var maxDimension: Int?
        package var filter = Filter.lanczos
        package var metadata = MetadataPolicy.strip
        package var minSavings: Percentage?
        package var maxPixels = 100_000_000
        package var maxBytes = ByteSize(bytes: 256 << 20)
        /// A named output made beside the file instead of replacing it.
        package var output: String?
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "quality", \.quality, doc: "Encoder quality, 0…1 as in `jpegData(compressionQuality:)` or 1…100.",
                    default: "0.8"),
                OptionField("subsampling", \.subsampling, doc: "Chroma subsampling: 420, 422 or 444.", default: "420"),
                OptionField("progressive", \.progressive, doc: "Write a progressive JPEG.", default: "false"),
                OptionField(
                    "max_dimension", \.maxDimension, range: 1...65_535,
                    doc: "Longest edge in pixels; larger photos are scaled down.",
                    default: "no limit"),
                OptionField("filter", \.filter, doc: "Downscaling filter: `lanczos` or `area`.", default: "lanczos"),
                OptionField(
                    "metadata", \.metadata,
                    doc:
                        "`strip` (EXIF, XMP, IPTC, GPS removed), `keep`, or `keep-except-gps`. The ICC profile is kept.",
                    default: "strip"),
                OptionField(
                    "min_savings", \.minSavings,
                    doc:
                        "Keep the original JPEG when re-encoding saves less than this (`5%`) and it needs no resize or rotation.",
                    default: "always re-encode"),
                OptionField(
                    "max_pixels", \.maxPixels, range: 1...Int(Int32.max),
                    doc: "Largest width × height decoded; checked from the header.",
                    default: "100000000"),
                OptionField(
                    "max_bytes", \.maxBytes, range: ByteSize(bytes: 1)...ByteSize(bytes: Int64(Int32.max)),
                    doc: "Largest input file read into memory.", default: "256MiB"),
                OptionField(
                    "output", \.output,
                    doc: "Make the JPEG as a named output beside the file (`output: preview`) instead of replacing it.",
                    default: "none (the JPEG replaces the file)"),
            ]
        }

        package func validate(at node: ConfigNode) throws {
            if let output { try OutputName.check(output, at: node) }
            if let maxDimension, maxDimension < 1 { throw node.error("max_dimension must be positive") }
            if maxPixels < 1 { throw node.error("max_pixels must be positive") }
            if maxBytes.bytes < 1 || maxBytes.bytes > Int64(Int32.max) {
                throw node.error("max_bytes must be 1 byte … 2 GiB, found \(maxBytes)")
            }
        }
    }

    package static let name = "jpeg"
    package static let templateOffer: TemplateOffer? = TemplateOffer(name: name, fields: nil)
    package static let summary = "Re-encodes JPEG, PNG and HEIC photos as upright JPEG (quality, size, metadata policy)."
    package static let writesWorkFiles = true

    let options: Options
    package init(options: Options) throws { self.options = options }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        if let name = options.output, ItemOutputs.deliveredEarlier(item, name: name, context: context) {
            return .proceed
        }
        let result = try StillTranscoder(options: options, stage: Self.name).transcode(
            path: item.artifact,
            outputPath: WorkFolder.outputPath(
                for: item, workDirectory: context.settings.workDirectory, stage: context.workFolderName(for: Self.name),
                fileExtension: "jpg"))
        if let name = options.output {
            ItemOutputs.finishMedia(
                item, name: name, path: result.artifact, probe: nil, fact: result.fact, stage: Self.name,
                context: context)
            return .proceed
        }
        WorkFolder.replaceArtifact(of: item, with: result.artifact, workDirectory: context.settings.workDirectory)
        item.facts[context.resultName ?? Self.name] = .object(result.fact)
        return .proceed
    }
}
