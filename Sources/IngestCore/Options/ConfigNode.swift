/// Where a value stands in a pipeline file: every error about the file names it.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    /// The pipeline file (or the `source` name of YAML text).
    public var file: String
    /// 1-based line.
    public var line: Int
    /// 1-based column.
    public var column: Int

    package init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`.
    public var description: String { "\(file):\(line):\(column)" }
}

/// A pipeline-file node after `${VAR}` interpolation, detached from the YAML parser so option decoding does not
/// depend on Yams' types. Scalars keep whether they were written plain (`3600`) or quoted (`"3600"`).
package struct ConfigNode: Sendable {
    package enum Kind: Sendable {
        case scalar(String, plain: Bool)
        case sequence([ConfigNode])
        /// Keys are scalars; pairs keep the order of the file.
        case mapping([(key: ConfigNode, value: ConfigNode)])
    }

    package var kind: Kind
    public var location: SourceLocation
    /// The environment variables a scalar's text came from (`${FIREBASE_TOKEN}`), for messages that name them.
    package var variables: [String] = []

    package init(_ kind: Kind, at location: SourceLocation) {
        self.kind = kind
        self.location = location
    }

    /// The scalar's text, or nil for a sequence or mapping.
    package var scalar: String? {
        if case .scalar(let text, _) = kind { return text }
        return nil
    }

    /// A plain `null`, `~` or empty scalar: YAML's null.
    package var isNull: Bool {
        if case .scalar(let text, let plain) = kind {
            return plain && ["", "~", "null", "Null", "NULL"].contains(text)
        }
        return false
    }

    /// What the node is, for "expected X, found Y" messages.
    package var kindDescription: String {
        switch kind {
        case .scalar(let text, _): return isNull ? "null" : ConfigNode.echo(text)
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }

    /// An error about this node.
    package func error(_ message: String, suggestion: String? = nil) -> PipelineFileError {
        PipelineFileError(location: location, message: message, suggestion: suggestion)
    }
}

/// A pipeline file that cannot be run: where, what, and a "did you mean" when one is close.
public struct PipelineFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where in the file, when the error has a place.
    public var location: SourceLocation?
    /// What is wrong, naming the option and the rule.
    public var message: String
    package var suggestion: String?

    package init(location: SourceLocation?, message: String, suggestion: String? = nil) {
        self.location = location
        // A message quoting a huge value from the file (a 20 MB scalar) stays a line a terminal can show.
        self.message =
            message.count > PipelineFileError.messageLimit
            ? "\(message.prefix(PipelineFileError.messageLimit))… (message cut from \(message.count) characters)"
            : message
        self.suggestion = suggestion
    }

    static let messageLimit = 2000

    /// `file:line:column: message`.
    public var description: String {
        var text = location.map { "\($0): error: " } ?? "error: "
        text += message
        if let suggestion { text += " (did you mean '\(suggestion)'?)" }
        return text
    }
}

/// Several errors of one file, reported together so a user fixes them in one pass.
public struct PipelineFileErrors: Error, Sendable, CustomStringConvertible {
    /// Every problem found, in file order.
    public var errors: [PipelineFileError]
    package init(_ errors: [PipelineFileError]) { self.errors = errors }
    /// `file:line:column: message`.
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// The closest candidate to a misspelt name (Levenshtein distance at most a third of its length, min 2).
package func closestMatch(to name: String, in candidates: [String]) -> String? {
    func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = Swift.min(
                    previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
    let lowered = Array(name.lowercased())
    let limit = Swift.max(2, lowered.count / 3)
    let scored = candidates.map { ($0, distance(lowered, Array($0.lowercased()))) }.filter { $0.1 <= limit }
    return scored.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) })?.0
}
