import Foundation
import NativeSQLite
import NativeSystem

/// The SQLite journal's file on disk: created whole (schema included) and private, and refused when it is not
/// one ingest can trust. A journal that is missing its tables, or damaged, must never be taken for a new one: the
/// run would then redo, and upload again, every file it had done.
enum JournalFile {
    /// Makes a new journal at `path`: the schema is written into a private (0600) file beside it, which is then
    /// renamed into place. A journal file therefore always holds its schema — a run killed while creating it
    /// leaves no empty journal behind — and SQLite creates the `-wal` and `-shm` files with the same mode.
    static func create(_ path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let temporary =
            (folder.isEmpty ? "" : folder + "/") + ".\(name).\(UUID().uuidString.prefix(8).lowercased()).tmp"
        defer { for suffix in ["", "-wal", "-shm", "-journal"] { try? FileSystem.remove(temporary + suffix) } }
        // Left by a run killed while creating the journal (the caller holds the writer lock: no other run is).
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? "." : folder)) ?? []
        for stale in names where stale.hasPrefix(".\(name).") && stale.contains(".tmp") {
            try? FileSystem.remove((folder.isEmpty ? "" : folder + "/") + stale)
        }
        do {
            try PrivateFile.create(temporary)
        } catch {
            throw JournalError("cannot create the journal \(path): \(error.reason)")
        }
        do {
            // Closed (and its write-ahead log folded in) before the rename.
            try {
                let database = try Database(path: temporary, create: false)
                try database.execute("PRAGMA journal_mode=WAL")
                try database.execute(JournalSchema.script(.sqlite))
            }()
        } catch let error as SQLiteError {
            throw JournalError("cannot create the journal \(path): \(error.message)")
        }
        do { try FileSystem.rename(temporary, to: path) } catch {
            throw JournalError("cannot create the journal \(path): \(error.reason)")
        }
    }

    /// Checks, before SQLite opens it, what a writer is about to use: an empty file, or a write-ahead log that is
    /// damaged or has no database beside it, is refused (SQLite would take the first for a new database and pass
    /// over the others in silence). The files are made private (0600) if an older ingest left them readable.
    static func checkBeforeWriting(_ path: String) throws {
        let wal = path + "-wal"
        let size = (try? FileStatus(path: path, followLinks: true))?.size
        if size == 0 {
            throw JournalError(
                "the journal \(path) is empty (0 bytes): ingest creates its journal whole, so this is a cut copy or "
                    + "not a journal; starting afresh over it would redo every file. Restore the full file, or move "
                    + "it away to start a new journal")
        }
        if size == nil, let walSize = try? FileStatus(path: wal, followLinks: true).size, walSize > 0 {
            throw JournalError(
                "found the write-ahead log \(wal) without its journal \(path); restore the journal, or move the "
                    + "log away to start a new one")
        }
        if let problem = writeAheadLogProblem(wal) {
            throw JournalError(
                "the journal's write-ahead log \(wal) is damaged (\(problem)): the latest records may be in it, "
                    + "and SQLite would pass over them in silence. Restore it, or move it away to go on with what "
                    + "\(path) holds")
        }
        for file in [path, wal, path + "-shm"] {
            do {
                try PrivateFile.restrict(file)
            } catch {
                throw JournalError("cannot make the journal file \(file) private: \(error.reason)")
            }
        }
    }

    /// What is wrong with the header of the write-ahead log at `path`, or nil when it is sound, empty or absent.
    /// The 32-byte header: magic 0x377f0682/3, format 3007000, page size, then a checksum of the first 24 bytes
    /// (SQLite's `walChecksumBytes`, big-endian words when the magic's low bit is set).
    static func writeAheadLogProblem(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let header = [UInt8]((try? handle.read(upToCount: 32)) ?? Data())
        if header.isEmpty { return nil }
        guard header.count == 32 else { return "its header is cut short at \(header.count) bytes" }
        func word(_ offset: Int, bigEndian: Bool = true) -> UInt32 {
            let bytes = header[offset..<offset + 4].map(UInt32.init)
            return bigEndian
                ? bytes[0] << 24 | bytes[1] << 16 | bytes[2] << 8 | bytes[3]
                : bytes[3] << 24 | bytes[2] << 16 | bytes[1] << 8 | bytes[0]
        }
        let magic = word(0)
        guard magic == 0x377f_0682 || magic == 0x377f_0683 else { return "it does not start as a write-ahead log" }
        guard word(4) == 3_007_000 else { return "unknown format \(word(4))" }
        var first: UInt32 = 0
        var second: UInt32 = 0
        for offset in stride(from: 0, to: 24, by: 8) {
            first = first &+ word(offset, bigEndian: magic & 1 == 1) &+ second
            second = second &+ word(offset + 4, bigEndian: magic & 1 == 1) &+ first
        }
        guard first == word(24), second == word(28) else { return "its header checksum does not match" }
        return nil
    }

    /// Refuses a database that is not an ingest journal of this format: tables missing (a foreign SQLite file, or
    /// an older journal copied without the `-wal` file that held everything) or a format this ingest cannot read.
    static func checkSchema(_ database: Database, path: String) throws {
        let tables = try database.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'files', 'stages')"
        ).rows().compactMap { $0.first?.string }
        let missing = ["meta", "files", "stages"].filter { !tables.contains($0) }
        guard missing.isEmpty else {
            throw JournalError(
                "the journal \(path) is not an ingest journal (no \(missing.joined(separator: ", ")) table): a "
                    + "damaged or foreign SQLite file, or a copy made without its -wal file. Starting afresh over it "
                    + "would redo every file; restore it, or move it away to start a new journal")
        }
        let version = try database.prepare("SELECT value FROM meta WHERE key = 'schema'").rows().first?.first?.string
        guard let version else {
            throw JournalError("the journal \(path) does not say its format (no schema version); it is damaged")
        }
        guard version == JournalSchema.version else {
            throw JournalError(
                "the journal \(path) has format \(version); this ingest reads format \(JournalSchema.version)")
        }
    }
}
