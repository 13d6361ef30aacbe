import Foundation
import IngestCore

/// An S3 POST policy: when the form expires and the conditions every form field and the file must meet.
///
/// Built by ``S3Presigner/presignedPost(bucket:key:contentType:contentLengthRange:successActionStatus:expires:date:)``
/// and read back from a backend's ticket (`upload_fields`) with ``init(decodingFields:)``, so the upload stage can
/// ``check(fileSize:key:contentType:now:)`` a file against it and fail it before sending a byte.
package struct S3PostPolicy: Sendable, Equatable {
    package enum Condition: Sendable, Equatable, CustomStringConvertible {
        /// `{"field": "value"}` or `["eq", "$field", "value"]`; the field name without `$`.
        case equals(String, String)
        /// `["starts-with", "$field", "prefix"]`.
        case startsWith(String, String)
        /// `["content-length-range", min, max]`, inclusive byte counts.
        case contentLengthRange(Int64, Int64)

        /// S3's own notation (`eq $key "a.m4a"`), which is how violations name the condition.
        package var description: String {
            switch self {
            case .equals(let field, let value): return "eq $\(field) \(S3PostPolicy.quoted(value))"
            case .startsWith(let field, let prefix): return "starts-with $\(field) \(S3PostPolicy.quoted(prefix))"
            case .contentLengthRange(let min, let max): return "content-length-range \(min)..\(max)"
            }
        }

        /// The form field the condition constrains, or nil for the file's length.
        package var field: String? {
            switch self {
            case .equals(let field, _), .startsWith(let field, _): return field
            case .contentLengthRange: return nil
            }
        }

        var json: JSONValue {
            switch self {
            case .equals(let field, let value): return .object([field: .string(value)])
            case .startsWith(let field, let prefix): return ["starts-with", .string("$" + field), .string(prefix)]
            case .contentLengthRange(let min, let max): return ["content-length-range", .int(min), .int(max)]
            }
        }

        func accepts(_ value: String) -> Bool {
            switch self {
            case .equals(_, let expected): return value == expected
            case .startsWith(_, let prefix): return value.hasPrefix(prefix)
            case .contentLengthRange: return true
            }
        }
    }

    /// One condition a file or form breaks. `rule` is a short stable name for reports (`content-length-range`,
    /// `key`, `content-type`, `expiration`, `field`); `description` names the condition and what was found.
    package struct Violation: Sendable, Equatable, CustomStringConvertible {
        package var rule: String
        package var description: String
    }

    package var expiration: Date
    package var conditions: [Condition]
    /// The form fields the policy came with when read from a ticket; empty when built here.
    package var fields: [String: String]

    package init(expiration: Date, conditions: [Condition], fields: [String: String] = [:]) {
        self.expiration = expiration
        self.conditions = conditions
        self.fields = fields
    }

    /// Reads the base64 `policy` out of a ticket's `upload_fields` (the field name's case does not matter) and keeps
    /// the fields for ``check(fileSize:key:contentType:now:)``.
    package init(decodingFields fields: [String: String]) throws {
        guard let encoded = fields.first(where: { $0.key.lowercased() == "policy" })?.value else {
            throw S3Error.invalidPolicy(
                "the fields have no 'policy' (found: \(fields.keys.sorted().joined(separator: ", ")))")
        }
        var text = encoded.filter { !$0.isWhitespace }
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text) else { throw S3Error.invalidPolicy("'policy' is not base64") }
        try self.init(json: data)
        self.fields = fields
    }

    /// Parses the policy document (the JSON inside the base64).
    package init(json data: Data) throws {
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw S3Error.invalidPolicy("the policy is not a JSON object")
        }
        guard let expirationText = root["expiration"] as? String else {
            throw S3Error.invalidPolicy("the policy has no 'expiration'")
        }
        guard let expiration = S3PostPolicy.parseDate(expirationText) else {
            throw S3Error.invalidPolicy("expiration '\(expirationText)' is not an ISO 8601 time")
        }
        guard let list = root["conditions"] as? [Any] else {
            throw S3Error.invalidPolicy("the policy has no 'conditions' list")
        }
        var conditions: [Condition] = []
        for (index, item) in list.enumerated() {
            if let object = item as? [String: Any] {
                for (field, value) in object.sorted(by: { $0.key < $1.key }) {
                    guard let value = S3PostPolicy.text(value) else {
                        throw S3Error.invalidPolicy("condition \(index + 1): the value of '\(field)' is not a string")
                    }
                    conditions.append(.equals(field.hasPrefix("$") ? String(field.dropFirst()) : field, value))
                }
            } else if let array = item as? [Any], let operation = (array.first as? String)?.lowercased() {
                switch operation {
                case "eq", "starts-with":
                    guard array.count == 3, let field = array[1] as? String, field.hasPrefix("$"),
                        let value = S3PostPolicy.text(array[2])
                    else {
                        throw S3Error.invalidPolicy(
                            "condition \(index + 1): expected [\"\(operation)\", \"$field\", \"value\"]")
                    }
                    let name = String(field.dropFirst())
                    conditions.append(operation == "eq" ? .equals(name, value) : .startsWith(name, value))
                case "content-length-range":
                    guard array.count == 3, let min = S3PostPolicy.integer(array[1]),
                        let max = S3PostPolicy.integer(array[2]),
                        min <= max
                    else {
                        throw S3Error.invalidPolicy(
                            "condition \(index + 1): expected [\"content-length-range\", min, max]")
                    }
                    conditions.append(.contentLengthRange(min, max))
                default:
                    throw S3Error.invalidPolicy("condition \(index + 1): unknown operation '\(operation)'")
                }
            } else {
                throw S3Error.invalidPolicy("condition \(index + 1) is neither an object nor a list")
            }
        }
        self.init(expiration: expiration, conditions: conditions)
    }

    /// The policy document, compact, conditions in order.
    package var json: String {
        let document: JSONValue = [
            "expiration": .string(S3PostPolicy.formatDate(expiration)), "conditions": .array(conditions.map(\.json)),
        ]
        return document.serialized()
    }

    /// What the form's `policy` field carries (and what is signed).
    package var base64: String { Data(json.utf8).base64EncodedString() }

    /// The inclusive byte range the file must be in, if the policy says.
    package var contentLengthRange: ClosedRange<Int64>? {
        for case .contentLengthRange(let min, let max) in conditions { return min...max }
        return nil
    }

    /// The status S3 answers a successful upload with: `success_action_status`, else S3's default 204.
    package var successActionStatus: Int {
        for case .equals(let field, let value) in conditions where field.lowercased() == "success_action_status" {
            return Int(value) ?? 204
        }
        return 204
    }

    /// Every condition the upload would break, in the policy's order after expiry; empty when S3 should accept it.
    /// - Parameters:
    ///   - key: the key the upload will use (with `${filename}` filled in); nil means the `key` field.
    ///   - contentType: the `Content-Type` field the upload will send; nil means the field in `fields`.
    /// Other conditions are checked against `fields` when the policy came from a ticket; fields no condition covers
    /// are reported too, since S3 refuses them. `now`: the run's clock's date, which the expiry is checked against.
    package func check(fileSize: Int64, key: String? = nil, contentType: String? = nil, now: Date)
        -> [Violation]
    {
        var violations: [Violation] = []
        if now >= expiration {
            violations.append(
                Violation(rule: "expiration", description: "policy expired at \(S3PostPolicy.formatDate(expiration))"))
        }
        func field(_ name: String) -> String? { fields.first { $0.key.lowercased() == name.lowercased() }?.value }
        for condition in conditions {
            switch condition {
            case .contentLengthRange(let min, let max):
                if fileSize < min || fileSize > max {
                    violations.append(
                        Violation(rule: "content-length-range", description: "\(condition): file is \(fileSize) bytes"))
                }
            case .equals(let name, _), .startsWith(let name, _):
                let lower = name.lowercased()
                if lower == "bucket" { continue }  // from the URL, not a form field
                let value: String?
                let rule: String
                switch lower {
                case "key": (value, rule) = (key ?? field("key"), "key")
                case "content-type": (value, rule) = (contentType ?? field("Content-Type"), "content-type")
                default:
                    if fields.isEmpty { continue }  // built here: the fields are made to match
                    (value, rule) = (field(name), "field")
                }
                guard let value else {
                    violations.append(Violation(rule: rule, description: "\(condition): the form has no \(name) field"))
                    continue
                }
                if !condition.accepts(value) {
                    violations.append(
                        Violation(rule: rule, description: "\(condition): \(name) is \(S3PostPolicy.quoted(value))"))
                }
            }
        }
        let exempt: Set<String> = ["policy", "x-amz-signature", "file", "signature", "awsaccesskeyid"]
        let covered = Set(conditions.compactMap { $0.field?.lowercased() })
        for name in fields.keys.sorted()
        where !exempt.contains(name.lowercased()) && !name.lowercased().hasPrefix("x-ignore-") {
            if !covered.contains(name.lowercased()) {
                violations.append(
                    Violation(rule: "field", description: "field \(name) is not allowed by any condition of the policy")
                )
            }
        }
        return violations
    }

    static func quoted(_ text: String) -> String {
        var out = ""
        JSONValue.writeString(text, to: &out)
        return out
    }

    static func text(_ value: Any) -> String? {
        if let string = value as? String { return string }
        if let number = value as? NSNumber { return number.stringValue }
        return nil
    }

    static func integer(_ value: Any) -> Int64? {
        if let string = value as? String { return Int64(string) }
        if let number = value as? NSNumber, number.doubleValue == number.doubleValue.rounded() {
            return number.int64Value
        }
        return nil
    }

    /// `2024-12-19T15:30:22Z` (S3 also accepts fractional seconds, which `parseDate` reads).
    static func formatDate(_ date: Date) -> String {
        let c = Array(SigV4Signer.timestamp(for: date))
        let day = "\(String(c[0..<4]))-\(String(c[4..<6]))-\(String(c[6..<8]))"
        return "\(day)T\(String(c[9..<11])):\(String(c[11..<13])):\(String(c[13..<15]))Z"
    }

    /// Years 0001–9999 only: `formatDate` writes four year digits (a year like 20300 came back as garbage).
    static func parseDate(_ text: String) -> Date? {
        if let date = parseUTCTimestamp(text) { return date }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var date = formatter.date(from: text)
        if date == nil {
            formatter.formatOptions = [.withInternetDateTime]
            date = formatter.date(from: text)
        }
        guard let date, (-62_135_596_800..<253_402_300_800).contains(date.timeIntervalSince1970) else { return nil }
        return date
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` or `YYYY-MM-DDTHH:MM:SS.fffZ` from 1583 on (what S3 and `formatDate` write), read
    /// without `ISO8601DateFormatter`, which loads ICU (about 5 MiB of resident memory, issue 13); nil for anything
    /// else, which `parseDate` then gives the formatter. The same Date as the formatter's (checked on 165,000 random
    /// timestamps); before 1583 ICU counts in the Julian calendar, so those years take the formatter's path.
    private static func parseUTCTimestamp(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count == 20 || b.count == 24, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            b[10] == UInt8(ascii: "T"), b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            b[b.count - 1] == UInt8(ascii: "Z"), b.count == 20 || b[19] == UInt8(ascii: ".")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for i in range {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) else { return nil }
                value = value * 10 + Int(b[i] - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            let millisecond = b.count == 24 ? number(20..<23) : 0,
            year >= 1583, (1...12).contains(month), hour < 24, minute < 60, second < 60
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        guard day >= 1, day <= [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] else {
            return nil
        }
        // Days since 1970-01-01 in the Gregorian calendar (years counted from March, so February comes last).
        let marchYear = month <= 2 ? year - 1 : year
        let era = marchYear / 400
        let yearOfEra = marchYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let days = era * 146_097 + yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear - 719_468
        let milliseconds = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millisecond
        return Date(timeIntervalSinceReferenceDate: Double(milliseconds) / 1000 - 978_307_200)
    }
}
