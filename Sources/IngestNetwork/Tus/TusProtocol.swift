import Crypto
import Foundation
import IngestCore
import NativeCurl
import NativeSystem

/// What a tus server said about itself in its `OPTIONS` answer (tus 1.0 §5.2): which extensions it speaks and
/// which checksum algorithms it takes. A server that does not answer `OPTIONS` is taken as core protocol only.
package struct TusCapabilities: Sendable, Equatable {
    var extensions: Set<String> = []
    var checksumAlgorithms: [String] = []
    var maxSize: Int64?

    init(extensions: Set<String> = [], checksumAlgorithms: [String] = [], maxSize: Int64? = nil) {
        self.extensions = extensions
        self.checksumAlgorithms = checksumAlgorithms
        self.maxSize = maxSize
    }

    init(_ response: HTTPResponse) {
        func list(_ name: String) -> [String] {
            (response.header(name) ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        }
        extensions = Set(list("Tus-Extension"))
        checksumAlgorithms = list("Tus-Checksum-Algorithm")
        maxSize = response.header("Tus-Max-Size").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
    }

    var terminates: Bool { extensions.contains("termination") }

    /// The checksum sent with each PATCH: the strongest of those we compute that the server announced, and only
    /// when it announced the `checksum` extension (an algorithm list alone promises nothing).
    var checksum: TusChecksum? {
        guard extensions.contains("checksum") else { return nil }
        return TusChecksum.allCases.first { checksumAlgorithms.contains($0.rawValue) }
    }
}

/// The algorithms of tus's checksum extension this client computes, strongest first.
package enum TusChecksum: String, CaseIterable, Sendable {
    case sha256, sha1, md5

    /// `Upload-Checksum`'s value for `length` bytes at `offset` of the file: `<algorithm> <base64 digest>`, read in
    /// 256 KiB pieces (the piece is never held whole).
    func header(path: String, offset: Int64, length: Int64) throws(SystemError) -> String {
        let file = try ReadOnlyFile(path: path)
        var sha256 = SHA256()
        var sha1 = Insecure.SHA1()
        var md5 = Insecure.MD5()
        var done: Int64 = 0
        while done < length {
            let bytes = try file.read(at: offset + done, count: Int(min(256 << 10, length - done)))
            if bytes.isEmpty { break }
            switch self {
            case .sha256: sha256.update(data: bytes)
            case .sha1: sha1.update(data: bytes)
            case .md5: md5.update(data: bytes)
            }
            done += Int64(bytes.count)
        }
        let digest: [UInt8]
        switch self {
        case .sha256: digest = Array(sha256.finalize())
        case .sha1: digest = Array(sha1.finalize())
        case .md5: digest = Array(md5.finalize())
        }
        return "\(rawValue) \(Data(digest).base64EncodedString())"
    }
}

package enum TusHeaders {
    static let version = "1.0.0"
    /// `Upload-Metadata`: `key base64(value)` pairs, comma-separated (tus 1.0 §5.3.1); keys must be ASCII without
    /// spaces or commas (one that is not is left out rather than break the header).
    static func metadata(_ pairs: [(String, String)]) -> String {
        pairs.filter { key, _ in
            !key.isEmpty && key.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0 != "," }
        }
        .map { "\($0.0) \(Data($0.1.utf8).base64EncodedString())" }
        .joined(separator: ",")
    }

    /// The upload URL from a creation answer's `Location`, which may be relative to the creation URL.
    static func uploadURL(location: String, creation: String) -> String? {
        guard let base = URL(string: creation), let url = URL(string: location, relativeTo: base) else { return nil }
        return url.absoluteString
    }

    /// `Upload-Offset` of an answer: a whole number ≥ 0, else nil.
    static func offset(_ response: HTTPResponse) -> Int64? {
        response.header("Upload-Offset").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
            .flatMap { $0 >= 0 ? $0 : nil }
    }
}

/// An upload the journal keeps, written as soon as the server created it, so a run killed at any point resumes the
/// same upload: its URL and the file it carries (path, size, mtime; a file changed since starts over).
package struct TusJournalEntry: Codable, Equatable, Sendable {
    var url: String
    var size: Int64
    var modified: Int64

    /// The journal's `meta` key of the upload of `path` through the creation endpoint `endpoint`.
    static func key(endpoint: String, path: String) -> String { "tus-upload \(endpoint) \(path)" }

    static func read(_ journal: (any StageJournal)?, key: String) -> TusJournalEntry? {
        guard let text = try? journal?.meta(key), !text.isEmpty else { return nil }
        return try? JSONDecoder().decode(TusJournalEntry.self, from: Data(text.utf8))
    }

    /// Written and made durable at once (a run killed right after the creation must still find it).
    func write(_ journal: (any StageJournal)?, key: String) throws {
        guard let journal else { return }
        let text = String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
        try journal.setMeta(key, text)
        try journal.commit()
    }

    /// Forgets the upload (done, terminated or gone): the key is left empty.
    static func clear(_ journal: (any StageJournal)?, key: String) {
        guard let journal else { return }
        try? journal.setMeta(key, "")
        try? journal.commit()
    }
}
