import Foundation
import Synchronization

/// One broken rule: which stage and rule, what was expected and what the file has. Reports print these.
public struct RuleFailure: Equatable, Sendable, CustomStringConvertible {
    /// The stage that found it (`validate`, `upload` …).
    public var stage: String
    /// The rule broken.
    public var rule: RuleName
    /// What was wrong, for a person: names the value and the limit, or the server's answer.
    public var message: String
    package var expected: String?
    package var actual: String?

    package init(stage: String, rule: RuleName, message: String, expected: String? = nil, actual: String? = nil) {
        self.stage = stage
        self.rule = rule
        self.message = message
        self.expected = expected
        self.actual = actual
    }

    /// `stage.rule: message`.
    public var description: String { "\(stage).\(rule): \(message)" }

    package var json: JSONValue {
        var object: JSONObject = ["stage": .string(stage), "rule": .string(rule.rawValue), "message": .string(message)]
        if let expected { object["expected"] = .string(expected) }
        if let actual { object["actual"] = .string(actual) }
        return .object(object)
    }
}

/// Thrown by a stage when the file breaks one or more rules. The item fails; later stages do not run on it;
/// the batch goes on.
package struct ItemFailed: Error, Sendable, CustomStringConvertible {
    package var failures: [RuleFailure]
    package init(_ failures: [RuleFailure]) { self.failures = failures }
    package init(stage: String, rule: RuleName, message: String, expected: String? = nil, actual: String? = nil) {
        self.failures = [RuleFailure(stage: stage, rule: rule, message: message, expected: expected, actual: actual)]
    }
    /// Every failure, `; `-separated.
    public var description: String { failures.map(\.description).joined(separator: "; ") }
}

/// What a stage decided for an item that broke no rule.
package enum StageOutcome: Sendable, Equatable {
    /// Go on with the next stage.
    case proceed
    /// Stop here without failing (e.g. no location and `required: false` elsewhere, a 409 mapped to skip).
    case skip(reason: String)
}

/// The final state of one input file.
public enum ItemStatus: String, Sendable {
    case passed, failed, skipped
}

/// One input file flowing through the stages. A worker owns it while it runs; stages read and add facts (`probe`,
/// `geohash`, `ticket` …) that later stages and templates use. Its facts sit behind a lock because a few stages
/// hand the item to threads of their own (multipart parts), not because workers share it.
package final class Item: Sendable {
    /// The input file as the run listed it (path, relative path, root, size, `stat`): the value its entry and its
    /// journal row refer to too.
    package let file: ListedFile
    /// Path as opened (the walked root joined with the relative path).
    package var path: String { file.path }
    /// Path relative to the input root it was found under (what reports and `file.path` show).
    package var relativePath: String { file.relativePath }
    /// The input root (a file or folder given on the command line) it was found under; empty when not walked.
    package var root: String { file.root }
    /// The position of `root` among the inputs of the run: with the relative path it tells every item of a run
    /// apart, so the item's work files never clash with another's.
    package var rootIndex: Int { file.rootIndex }
    /// Size in bytes when listed.
    package var size: Int64 { file.size }
    /// When the file started, its stages' seconds and its requests' attempts (for the reports).
    package let timings: FileTimings

    private struct Facts {
        var artifact: String
        var facts = JSONObject()
        var probeResult: ProbeResult?
        var temporaryFiles: [String] = []
        var probeError: ItemFailed?
        var templateValues = JSONObject()
        var knownSHA256: String?
        var knownIdentity: String?
    }
    private let state: Mutex<Facts>

    /// The file later stages act on: the original, or a transcoded file in the work directory.
    package var artifact: String {
        get { state.withLock { $0.artifact } }
        set {
            state.withLock { state in
                // A new artifact (a transcoded file) has facts of its own: a later probe must read it, not the
                // original, and `{{sha256}}`/`{{md5}}` describe the file being sent: the new one is hashed afresh.
                if state.artifact != newValue {
                    state.probeResult = nil
                    state.probeError = nil
                    state.templateValues["sha256"] = nil
                    state.templateValues["md5"] = nil
                }
                state.artifact = newValue
            }
        }
    }
    /// Facts added by stages, in the order they were added.
    package var facts: JSONObject {
        get { state.withLock { $0.facts } }
        set { state.withLock { $0.facts = newValue } }
    }
    /// Cached probe of `artifact`, shared by validate, probe and geohash so a file is opened once.
    package var probeResult: ProbeResult? {
        get { state.withLock { $0.probeResult } }
        set { state.withLock { $0.probeResult = newValue } }
    }
    /// Files in the work directory made for this item (transcoded artifacts); removed when the item is done.
    package var temporaryFiles: [String] {
        get { state.withLock { $0.temporaryFiles } }
        set { state.withLock { $0.temporaryFiles = newValue } }
    }
    /// The probe error, cached as well so a broken file is not opened again by each stage.
    package var probeError: ItemFailed? {
        get { state.withLock { $0.probeError } }
        set { state.withLock { $0.probeError = newValue } }
    }
    /// Template values made on first use and then fixed for the file (`uuid`, `sha256`, `md5`, `date`), so a key
    /// and the callback that reports it agree; the journal saves `uuid` and `date` before any upload so a re-run
    /// after a crash reuses them.
    package var templateValues: JSONObject {
        get { state.withLock { $0.templateValues } }
        set { state.withLock { $0.templateValues = newValue } }
    }
    /// SHA-256 (hex) of the input file once known: read by `sha256(stage:)`, restored from the journal, or set by
    /// a stage that streamed the original file anyway.
    package var knownSHA256: String? {
        get { state.withLock { $0.knownSHA256 } }
        set { state.withLock { $0.knownSHA256 = newValue } }
    }
    /// The journal's identity of the input file's content (`xxh3-128:<hex>`, see `ContentIdentity`) once known:
    /// computed while the file is sent, restored from the journal, or read on demand.
    package var knownIdentity: String? {
        get { state.withLock { $0.knownIdentity } }
        set { state.withLock { $0.knownIdentity = newValue } }
    }
    /// The input file as it was listed, before any stage read it (device, inode, size, mtime, ctime): what every stage
    /// must find and the upload must send (see `Item+Validated`); nil when not run by the runner.
    package var validated: ListedStatus? { file.status }

    /// `clock`: the run's, which the file's times (`timings`, `{{date}}`) are read on.
    package init(file: ListedFile, clock: any WaitClock = SystemClock()) {
        self.file = file
        timings = FileTimings(clock: clock)
        self.state = Mutex(Facts(artifact: file.path))
    }

    /// An item of a file not listed by a run (a stage or template tried on its own): no `stat`, nothing validated.
    package convenience init(path: String, relativePath: String, size: Int64, root: String = "", rootIndex: Int = 0) {
        self.init(
            file: ListedFile(path: path, relativePath: relativePath, root: root, rootIndex: rootIndex, size: size))
    }

    /// Final name component (`clip.mov`).
    package var fileName: String { (relativePath as NSString).lastPathComponent }
    /// Lower-cased extension without the dot (`mov`), empty when none.
    package var fileExtension: String { (fileName as NSString).pathExtension.lowercased() }
}

extension Item {
    /// Adds a line to the fact `notes` (a list), which reports print with the file: a passed file that needs a word
    /// of explanation (its call was already done, its object already stored).
    package func addNote(_ note: String) {
        var notes: [JSONValue] = []
        if case .array(let existing)? = facts["notes"] { notes = existing }
        notes.append(.string(note))
        facts["notes"] = .array(notes)
    }
}
