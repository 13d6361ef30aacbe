import Foundation
import IngestNative

/// One broken rule: which stage and rule, what was expected and what the file has. Reports print these.
public struct RuleFailure: Equatable, Sendable, CustomStringConvertible {
    public var stage: String
    public var rule: RuleName
    public var message: String
    public var expected: String?
    public var actual: String?

    public init(stage: String, rule: RuleName, message: String, expected: String? = nil, actual: String? = nil) {
        self.stage = stage
        self.rule = rule
        self.message = message
        self.expected = expected
        self.actual = actual
    }

    public var description: String { "\(stage).\(rule): \(message)" }

    public var json: JSONValue {
        var object: JSONObject = ["stage": .string(stage), "rule": .string(rule.rawValue), "message": .string(message)]
        if let expected { object["expected"] = .string(expected) }
        if let actual { object["actual"] = .string(actual) }
        return .object(object)
    }
}

/// Thrown by a stage when the file breaks one or more rules. The item fails; later stages do not run on it;
/// the batch goes on.
public struct ItemFailed: Error, Sendable, CustomStringConvertible {
    public var failures: [RuleFailure]
    public init(_ failures: [RuleFailure]) { self.failures = failures }
    public init(stage: String, rule: RuleName, message: String, expected: String? = nil, actual: String? = nil) {
        self.failures = [RuleFailure(stage: stage, rule: rule, message: message, expected: expected, actual: actual)]
    }
    public var description: String { failures.map(\.description).joined(separator: "; ") }
}

/// What a stage decided for an item that broke no rule.
public enum StageOutcome: Sendable, Equatable {
    /// Go on with the next stage.
    case proceed
    /// Stop here without failing (e.g. no location and `required: false` elsewhere, a 409 mapped to skip).
    case skip(reason: String)
}

/// The final state of one input file.
public enum ItemStatus: String, Sendable {
    case passed, failed, skipped
}

/// One input file flowing through the stages. A worker owns it while it runs, so it is not shared across threads
/// concurrently; stages read and add facts (`probe`, `geohash`, `ticket` …) that later stages and templates use.
public final class Item: @unchecked Sendable {
    /// Path as opened (the walked root joined with the relative path).
    public let path: String
    /// Path relative to the input root it was found under (what reports and `file.path` show).
    public let relativePath: String
    /// The input root (a file or folder given on the command line) it was found under; empty when not walked.
    public let root: String
    /// The position of `root` among the inputs of the run (0 for the first, in the walker's order); with the
    /// relative path it tells every item of a run apart, even when two roots hold the same relative path or one
    /// root is given twice, so the item's work files never clash with another's.
    public let rootIndex: Int
    /// Size in bytes when listed.
    public let size: Int64
    /// The file later stages act on: the original, or a transcoded file in the work directory.
    public var artifact: String {
        // A new artifact (a transcoded file) has facts of its own: a later probe must read it, not the original.
        didSet {
            if artifact != oldValue {
                probeResult = nil
                probeError = nil
                // `{{sha256}}`/`{{md5}}` describe the file being sent: the new one must be hashed afresh.
                templateValues["sha256"] = nil
                templateValues["md5"] = nil
            }
        }
    }
    /// Facts added by stages, in the order they were added.
    public var facts = JSONObject()
    /// Cached probe of `artifact`, shared by validate, probe and geohash so a file is opened once.
    public var probeResult: ProbeResult?
    /// Files in the work directory made for this item (transcoded artifacts); removed when the item is done.
    public var temporaryFiles: [String] = []
    /// The probe error, cached as well so a broken file is not opened again by each stage.
    public var probeError: ItemFailed?
    /// Template values made on first use and then fixed for the file (`uuid`, `sha256`, `md5`, `date`), so a key
    /// and the callback that reports it agree; the journal saves `uuid` and `date` before any upload so a re-run
    /// after a crash reuses them.
    public var templateValues = JSONObject()
    /// SHA-256 (hex) of the input file once known: read by `sha256(stage:)`, restored from the journal, or set by
    /// a stage that streamed the original file anyway.
    public var knownSHA256: String?
    /// The journal's identity of the input file's content (`xxh3-128:<hex>`, see `ContentIdentity`) once known:
    /// computed while the file is sent, restored from the journal, or read on demand.
    public var knownIdentity: String?
    /// The input file as it was listed, before any stage read it (device, inode, size, mtime, ctime): what every stage
    /// must find and the upload must send (see `Item+Validated`); nil when not run by the runner.
    var validated: FileStatus?
    /// When the file started, its stages' seconds and its requests' attempts (for the reports).
    public let timings = FileTimings()
    /// How to run again the stage whose results are saved under an `as:` name: an upload whose signed URL expired
    /// asks for a fresh ticket through this.
    var rerun: [String: () throws -> StageOutcome] = [:]

    public init(path: String, relativePath: String, size: Int64, root: String = "", rootIndex: Int = 0) {
        self.path = path
        self.relativePath = relativePath
        self.size = size
        self.root = root
        self.rootIndex = rootIndex
        self.artifact = path
    }

    /// Final name component (`clip.mov`).
    public var fileName: String { (relativePath as NSString).lastPathComponent }
    /// Lower-cased extension without the dot (`mov`), empty when none.
    public var fileExtension: String { (fileName as NSString).pathExtension.lowercased() }
}

extension Item {
    /// Adds a line to the fact `notes` (a list), which reports print with the file: a passed file that needs a word
    /// of explanation (its call was already done, its object already stored).
    func addNote(_ note: String) {
        var notes: [JSONValue] = []
        if case .array(let existing)? = facts["notes"] { notes = existing }
        notes.append(.string(note))
        facts["notes"] = .array(notes)
    }
}
