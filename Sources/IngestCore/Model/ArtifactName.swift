import Foundation

/// The name of the file being sent. A transcode changes the format (`IMG_1.HEIC` recompressed to JPEG,
/// `clip.mov` made MP4): the name an upload stores it under must carry the new extension, or the object is a JPEG
/// called `.HEIC`. The work file itself is `clip.mov.mp4` (unique in the work folder); the name sent is `clip.mp4`.
extension Item {
    /// Extension of the artifact without the dot: the input's own (case kept) until a stage made a file of another
    /// format, then that file's (`jpg`, `mp4`, `m4a`). A JPEG recompressed from a `.JPEG` keeps `JPEG`.
    package var artifactExtension: String {
        let original = (fileName as NSString).pathExtension
        guard artifact != path else { return original }
        let made = (artifact as NSString).pathExtension
        return Self.sameFormat(original, made) ? original : made
    }

    /// The input's name without its extension (`IMG_1`), as `file.stem`.
    package var artifactStem: String { (fileName as NSString).deletingPathExtension }

    /// `IMG_1.jpg` for `IMG_1.HEIC` recompressed; the input's name when no stage changed the format.
    package var artifactName: String {
        let ext = artifactExtension
        return ext.isEmpty ? artifactStem : artifactStem + "." + ext
    }

    /// The relative path with the artifact's name (`day1/clip.mp4`): the default upload key.
    package var artifactRelativePath: String {
        let folder = (relativePath as NSString).deletingLastPathComponent
        return folder.isEmpty ? artifactName : folder + "/" + artifactName
    }

    /// Two extensions that name one format (`JPG`/`jpeg`), so a same-format re-encode keeps the input's spelling.
    static func sameFormat(_ a: String, _ b: String) -> Bool {
        let (x, y) = (a.lowercased(), b.lowercased())
        if x == y { return true }
        let families: [Set<String>] = [["jpg", "jpeg", "jpe"], ["tif", "tiff"], ["heic", "heif"]]
        return families.contains { $0.contains(x) && $0.contains(y) }
    }
}

extension Item {
    /// What `{{artifact.…}}` offers, for the message when a template asks for something else.
    package static let artifactOffers = "artifact offers name, stem, ext, size, path (the file being sent)"

    /// The template value `{{artifact.<field>}}`; nil for a field it does not offer.
    package func artifactValue(_ field: String) -> JSONValue? {
        switch field {
        case "name": return .string(artifactName)
        case "stem": return .string(artifactStem)
        case "ext": return .string(artifactExtension)
        case "path": return .string(artifactRelativePath)
        case "size":
            return .int((try? FileManager.default.attributesOfItem(atPath: artifact)[.size] as? Int64) ?? size)
        default: return nil
        }
    }
}
