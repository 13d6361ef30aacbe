import Foundation
import IngestCore
import Logging

/// How `-v` events are written on standard error: a line for people, or one JSON object per line for collectors.
package enum LogFormat: String, Sendable, CaseIterable {
    case text
    case json
}

/// The swift-log handler behind `-v` and `--log-format`: each event is one line handed to `write` (which a live
/// progress display wraps so the two never overwrite each other). Every line goes through `Redaction.text` once
/// more on the way out (each string of a JSON line), so a secret that slipped into a message or a field never reaches the terminal or a log.
package struct RunLogHandler: LogHandler {
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    let format: LogFormat
    let write: @Sendable (String) -> Void
    /// The run's clock: a JSON line's `time`.
    let clock: any WaitClock

    package init(
        format: LogFormat, level: Logger.Level, clock: any WaitClock = SystemClock(),
        write: @escaping @Sendable (String) -> Void
    ) {
        self.format = format
        self.logLevel = level
        self.clock = clock
        self.write = write
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { $1 } }
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        switch format {
        case .text: write(Redaction.text(Self.textLine(message: "\(event.message)", fields: fields)))
        case .json:
            write(Self.jsonLine(level: event.level, message: "\(event.message)", fields: fields, at: clock.date))
        }
    }

    /// `ingest: upload a.jpg: PUT … → 503 …`: the file and stage first, then the message.
    static func textLine(message: String, fields: Logger.Metadata) -> String {
        var place: [String] = []
        if case .string(let stage)? = fields["stage"] { place.append(stage) }
        if case .string(let file)? = fields["file"] { place.append(TerminalText.escaped(file)) }
        let prefix = place.isEmpty ? "ingest: " : "ingest: \(place.joined(separator: " ")): "
        return prefix + message
    }

    /// `{"time":…,"level":"info","message":…,"file":…,"status":503,…}`: numbers stay numbers.
    static func jsonLine(level: Logger.Level, message: String, fields: Logger.Metadata, at date: Date) -> String {
        var object: JSONObject = [
            "time": .string(Self.timestamp(date)), "level": .string(level.rawValue),
            "message": .string(Redaction.text(message)),
        ]
        for key in fields.keys.sorted() where object[key] == nil {
            if let value = fields[key] { object[key] = json(value) }
        }
        return JSONValue.object(object).serialized()
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): return .string(Redaction.text(text))
        case .stringConvertible(let item):
            if let number = item as? Int { return .int(Int64(number)) }
            if let number = item as? Int64 { return .int(number) }
            if let number = item as? Double { return number.isFinite ? .double(number) : .string("\(number)") }
            if let flag = item as? Bool { return .bool(flag) }
            return .string(Redaction.text(item.description))
        case .array(let items): return .array(items.map(json))
        case .dictionary(let entries):
            var object = JSONObject()
            for key in entries.keys.sorted() { object[key] = entries[key].map(json) }
            return .object(object)
        }
    }

    static func timestamp(_ date: Date) -> String { Timestamp.string(date) }
}

/// `-v` → requests, `-vv` → their response headers too; `--log-format json` alone logs the requests (a collector
/// filters by level).
package enum RunLogLevel {
    package static func level(verbosity: Int, format: LogFormat) -> Logger.Level {
        if verbosity >= 2 { return .debug }
        if verbosity == 1 || format == .json { return .info }
        return .warning
    }
}
