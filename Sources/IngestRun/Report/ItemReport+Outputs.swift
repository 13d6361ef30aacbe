import Foundation
import IngestCore
import IngestMedia
import IngestStages

/// A file's poster (`poster` stage) at contact-sheet size, taken while its work file still exists: the HTML report's
/// card shows it instead of a frame it would pick itself.
package struct PosterPreview: Sendable, Equatable {
    var jpeg: [UInt8]
    var width: Int
    var height: Int
    var duration: Double?

    /// The poster of `item`, nil when none was made in this run (or it cannot be read).
    init?(_ item: Item) {
        guard case .object(let outputs)? = item.facts["outputs"] else { return nil }
        for (_, value) in outputs.pairs {
            guard case .object(let output) = value, output["stage"]?.stringValue == PosterStage.name,
                let path = output["work_path"]?.stringValue,
                let thumbnail = try? Self.thumbnail(path, format: output["format"]?.stringValue),
                let jpeg = try? thumbnail.jpeg()
            else { continue }
            self.jpeg = jpeg
            width = thumbnail.width
            height = thumbnail.height
            duration = item.probeResult?.duration
            return
        }
        return nil
    }

    /// The poster at contact-sheet size, decoded as the format it was written in.
    private static func thumbnail(_ path: String, format: String?) throws -> Thumbnail {
        format == StillFormat.webp.rawValue
            ? try StillThumbnailer.webp(path: path) : try StillThumbnailer.jpeg(path: path)
    }

    var preview: SheetPreview { .picture(jpeg: jpeg, width: width, height: height, duration: duration) }
}

extension HTMLCard {
    /// `outputs: poster 48 KB · proxy 1.2 MB`: each named output and its size, under the card's line.
    static func outputsLine(_ report: ItemReport) -> String {
        guard case .object(let outputs)? = report.facts["outputs"], !outputs.isEmpty else { return "" }
        let parts = outputs.pairs.map { name, value -> String in
            let size = value["size"]?.intValue.map { ByteSize.format($0) } ?? "?"
            return "\(htmlEscape(name)) <b>\(htmlEscape(size))</b>"
        }
        return "<p class=\"outputs\">outputs: \(parts.joined(separator: " · "))</p>"
    }
}
