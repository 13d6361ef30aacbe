import Foundation
import IngestCore
import NativeSQLite

/// One column of a row as a backend hands it back — SQLite's typed value, PostgreSQL's text (nil for NULL) — so the
/// journal's rows are decoded once, whichever database they come from.
protocol JournalColumn {
    var integerValue: Int64? { get }
    var textValue: String? { get }
}

extension SQLiteValue: JournalColumn {
    var integerValue: Int64? { int }
    var textValue: String? { string }
}

/// PostgreSQL's text protocol: every value is text, NULL is nil.
extension Optional: JournalColumn where Wrapped == String {
    var integerValue: Int64? { flatMap { Int64($0) } }
    var textValue: String? { self }
}

/// How the journal's columns encode what they hold, in both backends: objects and failures as JSON text, times as
/// Unix seconds.
enum JournalRow {
    /// `updated_at` of a row written at `date` (the run's clock's: `WaitClock.date`).
    static func time(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

    static func json(_ object: JSONObject) -> String { JSONValue.object(object).serialized() }

    /// The `failures` column: nil when there are none.
    static func json(_ failures: [RuleFailure]) -> String? {
        failures.isEmpty ? nil : JSONValue.array(failures.map(\.json)).serialized()
    }

    static func object(_ value: some JournalColumn) -> JSONObject {
        // `{}` (facts of a file whose stages added none) needs no parser.
        guard let text = value.textValue, text != "{}", case .object(let object)? = try? JSONValue.parse(text) else {
            return [:]
        }
        return object
    }

    static func failures(_ value: some JournalColumn) -> [RuleFailure] {
        guard let text = value.textValue, case .array(let items)? = try? JSONValue.parse(text) else { return [] }
        return items.map { item in
            RuleFailure(
                stage: item["stage"]?.stringValue ?? "", rule: RuleName(rawValue: item["rule"]?.stringValue ?? ""),
                message: item["message"]?.stringValue ?? "", expected: item["expected"]?.stringValue,
                actual: item["actual"]?.stringValue)
        }
    }
}

extension JournalRecord {
    /// A row of `JournalSchema.recordColumns`.
    init(row: [some JournalColumn]) {
        self.init(
            id: row[0].integerValue ?? 0, root: row[1].textValue ?? "", relativePath: row[2].textValue ?? "",
            path: row[3].textValue ?? "",
            size: row[4].integerValue, modified: row[5].integerValue,
            inode: row[6].integerValue.map { UInt64(bitPattern: $0) },
            sha256: row[7].textValue, pipeline: row[8].textValue ?? "", configHash: row[9].textValue ?? "",
            state: row[10].textValue.flatMap(JournalState.init(rawValue:)) ?? .running,
            attempts: Int(row[11].integerValue ?? 0),
            failures: JournalRow.failures(row[12]), reason: row[13].textValue, facts: JournalRow.object(row[14]),
            templateValues: JournalRow.object(row[15]), dedupeKey: row[16].textValue, duplicateOf: row[17].textValue,
            sideEffects: (row[18].integerValue ?? 0) != 0, runID: row.count > 19 ? row[19].textValue : nil)
    }
}

extension JournalStage {
    /// The columns read for a file's stages, in the order `JournalStage(row:)` reads them.
    static let columns = "position, name, status, attempts, outputs, error, updated_at"

    /// A row of `JournalStage.columns`.
    init(row: [some JournalColumn]) {
        self.init(
            position: Int(row[0].integerValue ?? 0), name: row[1].textValue ?? "",
            status: row[2].textValue.flatMap(JournalStage.Status.init(rawValue:)) ?? .started,
            attempts: Int(row[3].integerValue ?? 0), outputs: JournalRow.object(row[4]), error: row[5].textValue,
            updatedAt: row.count > 6 ? row[6].integerValue : nil)
    }
}

extension JournalRow {
    /// Files per state, from the rows of `SELECT state, COUNT(*) … GROUP BY state`.
    static func counts(_ rows: [[some JournalColumn]]) -> [JournalState: Int] {
        var counts: [JournalState: Int] = [:]
        for row in rows {
            if let state = row[0].textValue.flatMap(JournalState.init(rawValue:)) {
                counts[state] = Int(row[1].integerValue ?? 0)
            }
        }
        return counts
    }
}
