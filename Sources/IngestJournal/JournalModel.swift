import Foundation
import IngestCore
import NativeSystem

// What the journal keeps, whichever database keeps it: the runner and the `status` and `report` commands see only
// these types (through `JournalStore`), never a backend.

/// Where one input file stands in the journal.
package enum JournalState: String, Sendable, CaseIterable {
    /// Work started and has not finished: the run is going on, or it was killed.
    case running
    case done
    case failed
    case skipped
}

/// A journal that cannot be opened, read or written; the message keeps the database's own text (SQLite's or
/// libpq's).
package struct JournalError: Error, Sendable, CustomStringConvertible {
    package var message: String
    /// True for a full disk (SQLITE_FULL; for PostgreSQL, SQLSTATE class 53): the file fails cleanly and the next
    /// run continues.
    package var isDiskFull = false
    package init(_ message: String, isDiskFull: Bool = false) {
        self.message = message
        self.isDiskFull = isDiskFull
    }
    package var description: String { message }
}

/// What the journal knows of one input file.
package struct JournalRecord: Sendable {
    package var id: Int64
    package var root: String
    package var relativePath: String
    /// The path as opened (what reports show).
    package var path: String
    package var size: Int64?
    package var modified: Int64?
    package var inode: UInt64?
    package var sha256: String?
    package var pipeline: String
    package var configHash: String
    package var state: JournalState
    package var attempts: Int
    package var failures: [RuleFailure]
    package var reason: String?
    package var facts: JSONObject
    /// `uuid`, `date`: fixed for the file so a re-run names the same remote object.
    package var templateValues: JSONObject
    package var dedupeKey: String?
    /// Set when the file was skipped as a duplicate; such skips are looked at again by the next run.
    package var duplicateOf: String?
    /// True once a stage that uses the network started: the outside world may have seen this file.
    package var sideEffects: Bool
    /// The run that wrote the row last (a live run's `running` rows are in progress, not interrupted).
    package var runID: String? = nil
}

/// What the journal knows of one stage of one file.
package struct JournalStage: Sendable, Equatable {
    package enum Status: String, Sendable {
        case started, done, failed, skipped
    }
    package var position: Int
    package var name: String
    package var status: Status
    package var attempts: Int
    /// The facts the stage added (its `as:` result, a transcoded artifact, a remote key, an ETag …).
    package var outputs: JSONObject
    package var error: String?
    /// When the row was last written, in whole seconds since 1970: for a `started` stage, when its call began.
    package var updatedAt: Int64? = nil
}

/// What is known of a file when work on it starts (the same for every backend).
package struct JournalStart: Sendable {
    /// The journal's key of the root the file was found under (`JournalRecord.canonicalRoot` of `file.root`).
    package var root: String
    /// The file as the run listed it: the row keeps its path, relative path and identity (size, mtime, inode).
    package var file: ListedFile
    package var relativePath: String { file.relativePath }
    package var path: String { file.path }
    package var size: Int64 { file.status?.size ?? file.size }
    package var modified: Int64 { file.status?.modified ?? 0 }
    package var inode: UInt64 { file.status?.inode ?? 0 }
    package var sha256: String?
    package var pipeline: String
    package var configHash: String
    package var templateValues: JSONObject
    package var dedupeKey: String?
    /// Keep the stage rows (a resumed file reuses stages done earlier); false starts afresh.
    package var keepStages: Bool
    /// The file's row from an earlier run, if any.
    package var existingID: Int64?

    package init(
        root: String, file: ListedFile, sha256: String? = nil, pipeline: String, configHash: String,
        templateValues: JSONObject, dedupeKey: String? = nil, keepStages: Bool, existingID: Int64? = nil
    ) {
        self.root = root
        self.file = file
        self.sha256 = sha256
        self.pipeline = pipeline
        self.configHash = configHash
        self.templateValues = templateValues
        self.dedupeKey = dedupeKey
        self.keepStages = keepStages
        self.existingID = existingID
    }

    /// A row for a file given by its journaled identity rather than listed (tools and tests).
    package init(
        root: String, relativePath: String, path: String, size: Int64, modified: Int64, inode: UInt64,
        sha256: String? = nil, pipeline: String, configHash: String, templateValues: JSONObject,
        dedupeKey: String? = nil, keepStages: Bool, existingID: Int64? = nil
    ) {
        let status = ListedStatus(size: size, inode: inode, modified: modified)
        self.init(
            root: root,
            file: ListedFile(path: path, relativePath: relativePath, root: root, size: size, status: status),
            sha256: sha256, pipeline: pipeline, configHash: configHash, templateValues: templateValues,
            dedupeKey: dedupeKey, keepStages: keepStages, existingID: existingID)
    }
}

extension JournalRecord {
    /// The key the journal files a root under: absolute and tidied, so `media/` and `./media` are one root.
    package static func canonicalRoot(_ root: String) -> String {
        guard !root.isEmpty else { return "" }
        let absolute = root.hasPrefix("/") ? root : FileManager.default.currentDirectoryPath + "/" + root
        return (absolute as NSString).standardizingPath
    }
}
