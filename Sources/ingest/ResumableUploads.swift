import Foundation
import IngestCore
import IngestJournal

/// The lines `ingest status` shows for multipart uploads a later run resumes: which file, where it goes, and how
/// much of it S3 already holds (as the journal recorded the parts S3 confirmed).
enum ResumableUploads {
    static func lines(_ journal: any JournalStore) throws -> String {
        guard let store = journal as? any MultipartJournal else { return "" }
        let uploads = try store.multipartUploads()
        guard !uploads.isEmpty else { return "" }
        var paths: [Int64: String] = [:]
        let wanted = Set(uploads.map(\.fileID))
        try journal.forEachRecord { record in if wanted.contains(record.id) { paths[record.id] = record.path } }
        var out = ""
        for upload in uploads.sorted(by: { (paths[$0.fileID] ?? "") < (paths[$1.fileID] ?? "") }) {
            let parts = max(1, (upload.fileSize + upload.partSize - 1) / max(1, upload.partSize))
            let percent = upload.fileSize > 0 ? Double(upload.storedBytes) * 100 / Double(upload.fileSize) : 0
            let path = TerminalText.escaped(paths[upload.fileID] ?? "file #\(upload.fileID)")
            let target = TerminalText.escaped("s3://\(upload.bucket)/\(upload.key)")
            if upload.isIntent {
                out +=
                    "PART  \(path)  a multipart upload to \(target) was being created when its run stopped; the next "
                    + "run aborts any upload that create left open and starts anew\n"
                continue
            }
            out +=
                "PART  \(path)  resumable: \(upload.parts.count) of \(parts) parts stored, "
                + "\(mebibytes(upload.storedBytes)) of \(mebibytes(upload.fileSize)) "
                + String(format: "(%.0f %%)", percent) + " in \(target); the next run sends the rest\n"
        }
        return out
    }

    static func mebibytes(_ bytes: Int64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}
