import Foundation
import NativeSystem

/// The contact sheet's JPEGs, spooled as each file finishes and placed when the page is written: inline as `data:`
/// URIs for a batch small enough to open quickly that way (one file to attach or mail), else as files in a folder
/// beside the report named after it (`batch.html` → `batch_files/`), loaded lazily as the reader scrolls — 10,000
/// inline thumbnails would make a page of tens of megabytes of base64 the browser must parse before it shows
/// anything. A card refers to its JPEG by a marker holding the spool offset and length (`\u{1}offset:length\u{1}`;
/// escaped page text never holds U+0001), so nothing about the thumbnails is kept in memory.
final class ThumbnailSpool {
    /// Thumbnails inlined at most; past this they go to the folder (when the report is a file).
    static let inlineLimit = 400
    static let marker: UInt8 = 1

    private let spool: ReportSpool
    private var offset: Int64 = 0
    private(set) var count = 0

    init() throws { spool = try ReportSpool(name: "html-thumbnails") }

    /// Stores one JPEG; returns the marker its card's `src` holds.
    func add(_ jpeg: [UInt8]) throws -> String {
        try spool.append(Data(jpeg))
        let marker = "\u{1}\(offset):\(jpeg.count)\u{1}"
        offset += Int64(jpeg.count)
        count += 1
        return marker
    }

    /// The folder beside `reportPath` the thumbnails go in: `batch.html` → `batch_files` (as browsers save pages).
    static func folder(besideReport reportPath: String) -> (path: String, name: String) {
        let name = ((reportPath as NSString).lastPathComponent as NSString).deletingPathExtension + "_files"
        return (((reportPath as NSString).deletingLastPathComponent as NSString).appendingPathComponent(name), name)
    }

    /// How the markers are replaced: by `data:` URIs, or by files written into a folder (`relative` is its name
    /// as the page refers to it).
    enum Placement {
        case inline
        case folder(path: String, relative: String)
    }

    /// Copies `cards` onto `output`, replacing each marker as `placement` says.
    func copy(_ cards: ReportSpool, to output: ReportOutput, placement: Placement) throws {
        var pending = Data()
        try cards.forEachChunk { chunk in
            pending.append(chunk)
            var start = pending.startIndex
            while let open = pending[start...].firstIndex(of: Self.marker) {
                guard let close = pending[(open + 1)...].firstIndex(of: Self.marker) else { break }
                try output.write(pending[start..<open])
                try output.write(
                    try replacement(String(decoding: pending[(open + 1)..<close], as: UTF8.self), placement))
                start = close + 1
            }
            // Keep an unfinished marker for the next chunk; write everything before it.
            let keep = pending[start...].firstIndex(of: Self.marker) ?? pending.endIndex
            try output.write(pending[start..<keep])
            pending = Data(pending[keep...])
        }
        try output.write(pending)
    }

    private func replacement(_ marker: String, _ placement: Placement) throws -> Data {
        let parts = marker.split(separator: ":")
        guard parts.count == 2, let at = Int64(parts[0]), let length = Int(parts[1]) else { return Data() }
        let jpeg = try spool.read(at: at, count: length)
        switch placement {
        case .inline:
            return Data(("data:image/jpeg;base64," + jpeg.base64EncodedString()).utf8)
        case .folder(let path, let relative):
            let name = "\(at).jpg"
            do {
                try StillFile.writeAtomically([[UInt8](jpeg)], to: path + "/" + name)
            } catch {
                throw ReportError("cannot write the report's thumbnail \(path)/\(name): \(error)")
            }
            let folder = relative.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? relative
            // `./` first: a folder named like `a:b_files` must not read as a URL scheme.
            return Data(htmlEscape("./" + folder + "/" + name).utf8)
        }
    }
}
