import IngestJournal

/// The pipelines whose files a journal holds, by name, with each one's files per state.
/// Two pipelines may share a journal (one per folder, or a validate pipeline and an upload one); `status` and
/// `report` then show each file under its own pipeline instead of the name of the last one run.
struct JournalPipelines {
    private(set) var names: [String] = []
    private(set) var counts: [String: [JournalState: Int]] = [:]

    init(_ journal: any JournalStore) throws {
        try journal.forEachRecord { record in
            if counts[record.pipeline] == nil { names.append(record.pipeline) }
            counts[record.pipeline, default: [:]][record.state, default: 0] += 1
        }
        names.sort()
    }

    /// True when the files went through more than one pipeline: each is then labelled with its own.
    var mixed: Bool { names.count > 1 }

    /// `first: 2 done, 1 failed` per pipeline, for `ingest status`.
    var lines: [String] {
        names.map { name in
            let states: [(JournalState, String)] = [
                (.done, "done"), (.failed, "failed"), (.skipped, "skipped"), (.running, "unfinished"),
            ]
            let parts = states.compactMap { state, label in counts[name]?[state].map { "\($0) \(label)" } }
            return "\(Self.label(name)): " + parts.joined(separator: ", ")
        }
    }

    /// A pipeline's name as shown (a journal of an older version may have none).
    static func label(_ name: String) -> String { name.isEmpty ? "(unnamed)" : name }
}
