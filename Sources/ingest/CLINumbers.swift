import ArgumentParser
import Foundation
import IngestConfig
import IngestCore

// Every number given on the command line is parsed here, against the option's range: `nan`, `inf`, `1e300`,
// `-1` and integers past 2⁶³ get a message naming the option and what it accepts, never a trap later on.
// Options holding numbers parse `.unconditional`ly, so `--timeout -1` reaches the range check instead of being
// taken for an option ("Missing value").

/// Why a number on the command line was refused; ArgumentParser prints it after "The value … is invalid".
struct CLINumberError: Error, CustomStringConvertible {
    var description: String
}

enum CLINumber {
    /// Files worked on at once (`--concurrency`, `--jobs`).
    static let workers = 1...Pipeline.maxConcurrency
    /// Seconds a probe may take (`--timeout`, `--probe-timeout`): a millisecond to a day.
    static let probeSeconds = 0.001...86400.0
    /// The help of `--timeout` (probe) and `--probe-timeout` (run, watch): one text for one number.
    static var probeTimeoutHelp: ArgumentHelp {
        ArgumentHelp(
            "Seconds one file's probe may take before it fails (0.001 to 86400; default: 10).", valueName: "seconds")
    }
    /// Seconds a PostgreSQL lease lasts.
    static let leaseSeconds = 1.0...86400.0

    /// A whole number in `range`; `rule` says what is allowed when the range alone would not (`200, 201 or 204`).
    static func whole(_ text: String, _ option: String, _ range: ClosedRange<Int>, rule: String? = nil) throws -> Int {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let value = Int(trimmed), range.contains(value) else {
            let allowed = rule ?? "a whole number between \(range.lowerBound) and \(range.upperBound)"
            throw CLINumberError(description: "\(option) must be \(allowed), found \(echo(text))")
        }
        return value
    }

    static func seconds(_ text: String, _ option: String, _ range: ClosedRange<Double>) throws -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let value = Double(trimmed), range.contains(value) else {
            throw CLINumberError(
                description: "\(option) must be a number of seconds between \(format(range.lowerBound)) and "
                    + "\(format(range.upperBound)), found \(echo(text))")
        }
        return value
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int64(value)) : String(value)
    }

    /// The text as given, cut short when it is long.
    private static func echo(_ text: String) -> String {
        text.count > 200 ? "'\(text.prefix(200))…' (\(text.count) characters)" : "'\(text)'"
    }
}
