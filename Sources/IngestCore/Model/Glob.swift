/// A path glob as users write them in `.gitignore` and CI configs: `*` and `?` within one path segment, `[abc]` and
/// `[a-z]` classes, and `**` for any number of segments (`**/*.mov` matches `clip.mov` and `a/b/clip.mov`).
/// Matching ignores case: phones write `IMG_0001.MOV`, and a user who wrote `*.mov` means it too.
///
/// Its time grows with pattern length × path length whatever the pattern (a table over pattern and path segments,
/// and within a segment a scan that only ever goes back to the last `*`): a fully backtracking matcher took 53 s for
/// `**/*a*a*a*a*a*a*a*a*b` against one name of 40 `a`s, and minutes for `**/` repeated over a deep path.
package struct Glob: Sendable, Equatable, CustomStringConvertible {
    package let pattern: String
    private let segments: [Segment]

    /// One `/`-separated piece of the pattern.
    private enum Segment: Sendable, Equatable {
        /// `**`: zero or more whole path segments.
        case anyDepth
        /// Anything else: matches exactly one path segment.
        case name([Token])
    }

    /// One unit of a segment pattern.
    private enum Token: Sendable, Equatable {
        case literal(Character)
        /// `?`: exactly one character.
        case one
        /// `*`: any run of characters, the empty one included.
        case star
        /// `[abc]`, `[a-z]`, `[!x]` or `[^x]`; an unclosed `[` is a literal.
        case set(BracketSet)
    }

    /// The inside of a `[…]` class.
    private struct BracketSet: Sendable, Equatable {
        var members: [Character] = []
        /// `a-z` as (low, high); a range written backwards (`z-a`) matches nothing.
        var ranges: [[Character]] = []
        var negated = false

        func contains(_ character: Character) -> Bool {
            let found =
                members.contains(character) || ranges.contains { $0[0] <= character && character <= $0[1] }
            return found != negated
        }
    }

    package init(_ pattern: String) {
        self.pattern = pattern
        segments = pattern.lowercased().split(separator: "/", omittingEmptySubsequences: true).map { piece in
            piece == "**" ? .anyDepth : .name(Glob.tokens(Array(piece)))
        }
    }

    package var description: String { pattern }

    /// True when the whole relative path (segments joined by `/`) matches.
    package func matches(_ relativePath: String) -> Bool {
        var steps = 0
        return matches(relativePath, steps: &steps)
    }

    /// `matches`, counting its steps (table cells and character comparisons) into `steps`: tests check the bound.
    package func matches(_ relativePath: String, steps: inout Int) -> Bool {
        let parts = relativePath.lowercased().split(separator: "/", omittingEmptySubsequences: true).map { Array($0) }
        // below[j]: whether the pattern segments after the current one match parts[j...]; filled from the end.
        var below = [Bool](repeating: false, count: parts.count + 1)
        below[parts.count] = true
        var row = below
        for segment in segments.reversed() {
            for j in stride(from: parts.count, through: 0, by: -1) {
                steps += 1
                switch segment {
                case .anyDepth:
                    // Take no segment here, or take parts[j] and stay on `**`.
                    row[j] = below[j] || (j < parts.count && row[j + 1])
                case .name(let tokens):
                    row[j] = j < parts.count && below[j + 1] && Glob.match(tokens, parts[j], steps: &steps)
                }
            }
            swap(&below, &row)
        }
        return below[0]
    }

    /// Whether one segment pattern matches one path segment. Every token but `*` takes exactly one character, so
    /// on a mismatch it is enough to go back to the last `*` and let it take one character more: each return to it
    /// starts one position further on, so the work is at most (tokens + 1) × (characters + 1).
    private static func match(_ tokens: [Token], _ text: [Character], steps: inout Int) -> Bool {
        var token = 0
        var position = 0
        // The last `*` seen and the position its run of characters ends at, if any.
        var lastStar: (token: Int, end: Int)?
        while position < text.count {
            steps += 1
            if token < tokens.count, tokens[token] == .star {
                lastStar = (token, position)
                token += 1
            } else if token < tokens.count, takes(tokens[token], text[position]) {
                token += 1
                position += 1
            } else if let star = lastStar {
                lastStar = (star.token, star.end + 1)
                token = star.token + 1
                position = star.end + 1
            } else {
                return false
            }
        }
        while token < tokens.count, tokens[token] == .star {
            steps += 1
            token += 1
        }
        return token == tokens.count
    }

    /// Whether a one-character token takes `character`.
    private static func takes(_ token: Token, _ character: Character) -> Bool {
        switch token {
        case .star: return false
        case .one: return true
        case .literal(let literal): return literal == character
        case .set(let set): return set.contains(character)
        }
    }

    /// Splits a segment pattern into tokens, left to right: a `[` with a `]` after it opens a class up to the first
    /// such `]` (so `[]` matches nothing and `[!]` any one character); without one it is a literal `[`.
    private static func tokens(_ pattern: [Character]) -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < pattern.count {
            let head = pattern[index]
            switch head {
            case "*": tokens.append(.star)
            case "?": tokens.append(.one)
            case "[":
                guard let close = pattern[(index + 1)...].firstIndex(of: "]") else {
                    tokens.append(.literal("["))
                    break
                }
                tokens.append(.set(characterSet(pattern[(index + 1)..<close])))
                index = close
            default: tokens.append(.literal(head))
            }
            index += 1
        }
        return tokens
    }

    /// The inside of a class: a leading `!` or `^` negates it; `x-y` is a range unless the `-` is last.
    private static func characterSet(_ inside: ArraySlice<Character>) -> BracketSet {
        var set = BracketSet()
        var inside = inside
        if inside.first == "!" || inside.first == "^" {
            set.negated = true
            inside = inside.dropFirst()
        }
        var index = inside.startIndex
        while index < inside.endIndex {
            if index + 2 < inside.endIndex, inside[index + 1] == "-" {
                set.ranges.append([inside[index], inside[index + 2]])
                index += 3
            } else {
                set.members.append(inside[index])
                index += 1
            }
        }
        return set
    }
}
