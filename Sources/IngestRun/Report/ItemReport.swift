import Foundation
import IngestCore

/// What happened to one input file: the report formats print these.
public struct ItemReport: Sendable {
    /// The path as opened (root joined with the relative path).
    public var path: String
    /// The path under the input folder it was found in, as reports show it.
    public var relativePath: String
    /// Passed, failed or skipped.
    public var status: ItemStatus
    /// Every broken rule (empty unless `status` is `.failed`).
    public var failures: [RuleFailure]
    /// Why the file was skipped (a stage decided so; `status` is `.skipped`).
    public var skipReason: String?
    /// Facts the stages recorded (`probe`, `geohash`, results under `as:` names).
    public var facts: JSONObject
    /// The pipeline the file went through, when a report mixes several (`ingest report` on a shared journal).
    public var pipeline: String?
    /// When the file started, seconds per stage, each request's attempts (`FileTimings.json`); nil when no stage
    /// ran (a file skipped before any).
    public var timings: JSONValue?
    /// Seconds the file took (JUnit's `time`); 0 when no stage ran.
    public var seconds: Double = 0
    /// True when an `upload` stage delivered the file: in this run (rehearsed, in a rehearsal), or — a file the journal
    /// has as done — in the run that finished it. `on_success` disposes of delivered files only (`Disposer`).
    package var delivered = false
    /// The file's poster output at contact-sheet size, for the HTML report's card (see `ItemReport+Outputs`).
    package var poster: PosterPreview?

    package init(
        path: String, relativePath: String, status: ItemStatus, failures: [RuleFailure] = [],
        skipReason: String? = nil, facts: JSONObject = JSONObject()
    ) {
        self.path = path
        self.relativePath = relativePath
        self.status = status
        self.failures = failures
        self.skipReason = skipReason
        self.facts = facts
    }

    /// The JSON Lines object: `path`, `status`, `failures[]`, `reason` for skips, and the facts.
    public var json: JSONValue {
        var object: JSONObject = [
            "path": .string(path), "status": .string(status.rawValue), "failures": .array(failures.map(\.json)),
        ]
        if let skipReason { object["reason"] = .string(skipReason) }
        if let pipeline { object["pipeline"] = .string(pipeline) }
        object["facts"] = .object(facts)
        if let timings { object["timings"] = timings }
        return .object(object)
    }
}
