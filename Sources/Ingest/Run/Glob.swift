/// A path glob as users write them in `.gitignore` and CI configs: `*` and `?` within one path segment, `[abc]` and
/// `[a-z]` classes, and `**` for any number of segments (`**/*.mov` matches `clip.mov` and `a/b/clip.mov`).
/// Matching ignores case: phones write `IMG_0001.MOV`, and a user who wrote `*.mov` means it too.
public struct Glob: Sendable, Equatable, CustomStringConvertible {
    public let pattern: String
    private let segments: [[Character]]

    public init(_ pattern: String) {
        self.pattern = pattern
        segments = pattern.lowercased().split(separator: "/", omittingEmptySubsequences: true).map { Array($0) }
    }

    public var description: String { pattern }

    /// True when the whole relative path (segments joined by `/`) matches.
    public func matches(_ relativePath: String) -> Bool {
        let parts = relativePath.lowercased().split(separator: "/", omittingEmptySubsequences: true).map { Array($0) }
        return Glob.match(segments[...], parts[...])
    }

    private static func match(_ pattern: ArraySlice<[Character]>, _ path: ArraySlice<[Character]>) -> Bool {
        guard let first = pattern.first else { return path.isEmpty }
        if first == ["*", "*"] {
            let rest = pattern.dropFirst()
            // `**` takes zero or more segments.
            var remaining = path
            while true {
                if match(rest, remaining) { return true }
                guard !remaining.isEmpty else { return false }
                remaining = remaining.dropFirst()
            }
        }
        guard let segment = path.first, matchSegment(first[...], segment[...]) else { return false }
        return match(pattern.dropFirst(), path.dropFirst())
    }

    private static func matchSegment(_ pattern: ArraySlice<Character>, _ text: ArraySlice<Character>) -> Bool {
        guard let head = pattern.first else { return text.isEmpty }
        switch head {
        case "*":
            var remaining = text
            while true {
                if matchSegment(pattern.dropFirst(), remaining) { return true }
                guard !remaining.isEmpty else { return false }
                remaining = remaining.dropFirst()
            }
        case "?":
            guard !text.isEmpty else { return false }
            return matchSegment(pattern.dropFirst(), text.dropFirst())
        case "[":
            guard let character = text.first, let close = pattern.dropFirst().firstIndex(of: "]") else {
                // An unclosed `[` is a literal.
                return text.first == "[" && matchSegment(pattern.dropFirst(), text.dropFirst())
            }
            var set = pattern[(pattern.startIndex + 1)..<close]
            let negated = set.first == "!" || set.first == "^"
            if negated { set = set.dropFirst() }
            var found = false
            var index = set.startIndex
            while index < set.endIndex {
                let low = set[index]
                if index + 2 < set.endIndex, set[index + 1] == "-" {
                    if low <= character && character <= set[index + 2] { found = true }
                    index += 3
                } else {
                    if low == character { found = true }
                    index += 1
                }
            }
            guard found != negated else { return false }
            return matchSegment(pattern[(close + 1)...], text.dropFirst())
        default:
            guard text.first == head else { return false }
            return matchSegment(pattern.dropFirst(), text.dropFirst())
        }
    }
}
