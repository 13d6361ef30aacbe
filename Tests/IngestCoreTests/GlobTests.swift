import Foundation
import Testing

@testable import IngestCore

/// The glob matcher: the same answers as the backtracking matcher it replaced, with work bounded by pattern length ×
/// path length on the patterns that made that one run for minutes.
@Suite struct GlobTests {
    /// `Glob.matches`, checking the answer and that its steps stay within 6 × |pattern| × |path| (segment cells
    /// m × (n + 1) ≤ 2|P||S|, character steps Σ (k + 1)(l + 1) ≤ 4|P||S|); the backtracking matcher took millions
    /// here, exponential in the number of stars.
    func expectBounded(
        _ pattern: String, _ path: String, _ expected: Bool, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        var steps = 0
        let answer = Glob(pattern).matches(path, steps: &steps)
        #expect(answer == expected, "\(pattern) against \(path)", sourceLocation: sourceLocation)
        let bound = 6 * max(1, pattern.count) * max(1, path.count)
        #expect(steps <= bound, "\(steps) steps > \(bound) for \(pattern)", sourceLocation: sourceLocation)
    }

    @Test func starsAgainstALongNameTakeBoundedWork() {
        let name = String(repeating: "a", count: 40)
        // 53 s with the backtracking matcher (8 stars); 11 stars ran past 16 minutes.
        expectBounded("**/*a*a*a*a*a*a*a*a*b", name, false)
        expectBounded("**/*a*a*a*a*a*a*a*a*a*a*a*b", "x/y/" + name, false)
        expectBounded("**/*a*a*a*a*a*a*a*a*a*a*a*a", "x/y/" + name, true)
        expectBounded("*?*?*?*?*?*?*?*?*[b]", name, false)
        // Small enough that the backtracking matcher finishes, still far past the bound (thousands of steps).
        expectBounded("*a*a*a*a*b", String(repeating: "a", count: 12), false)
    }

    @Test func manyAnyDepthSegmentsAgainstADeepPathTakeBoundedWork() {
        let deep = (0..<25).map { "d\($0)" }.joined(separator: "/")
        // 62 s with the backtracking matcher.
        let eight = String(repeating: "**/", count: 8)
        expectBounded(eight + "nothing.mov", deep + "/clip.mov", false)
        expectBounded(eight + "clip.mov", deep + "/clip.mov", true)
        expectBounded(eight + "d3/**/d20/**/*.mov", deep + "/clip.mov", true)
        expectBounded(eight + "d20/**/d3/**/*.mov", deep + "/clip.mov", false)
        expectBounded("**/**/**/**/x", "a/a/a/a/a/a/a/a/a/a/a/a", false)
    }

    /// Random patterns and paths over the characters that mean something: every answer equals the backtracking
    /// matcher's (kept here as the oracle), so `**`, `*`, `?`, classes, ranges, negation, unclosed `[` and case keep
    /// their meaning.
    @Test func sameAnswersAsTheBacktrackingMatcher() {
        var random = SplitMix(seed: 12)
        let patternPieces = ["a", "b", "A", "/", "*", "**/", "/**", "?", "[", "]", "!", "^", "-", ".", "[a-b]", "[!a]"]
        let pathPieces = ["a", "b", "B", "/", "-", "[", "]", "!", ".", "c"]
        var matched = 0
        for _ in 0..<20000 {
            let pattern = (0..<random.next(below: 7)).map { _ in patternPieces[random.next(below: patternPieces.count)]
            }
            .joined()
            let path = (0..<random.next(below: 9)).map { _ in pathPieces[random.next(below: pathPieces.count)] }
                .joined()
            let expected = BacktrackingGlob(pattern).matches(path)
            if expected { matched += 1 }
            #expect(Glob(pattern).matches(path) == expected, "\(pattern) against \(path)")
        }
        // Both answers were exercised.
        #expect(matched > 1000 && matched < 19000, "\(matched) matched")
    }

    @Test func classesAndLiterals() {
        #expect(Glob("[z-a]").matches("m") == false)
        #expect(Glob("[!]").matches("x"))
        #expect(Glob("[]").matches("]") == false)
        #expect(Glob("[a-]").matches("-"))
        #expect(Glob("a[b").matches("a[b"))
        #expect(Glob("[^x]?").matches("yz"))
        #expect(Glob("").matches(""))
        #expect(Glob("**").matches("a/b/c"))
        #expect(Glob("IMG_*.MOV").matches("img_0001.mov"))
    }
}

/// A deterministic random source for the comparison above.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(below bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(bound))
    }
}

/// The matcher `Glob` replaced, verbatim: right, but exponential on hostile patterns. The oracle for the comparison.
struct BacktrackingGlob {
    let segments: [[Character]]

    init(_ pattern: String) {
        segments = pattern.lowercased().split(separator: "/", omittingEmptySubsequences: true).map { Array($0) }
    }

    func matches(_ relativePath: String) -> Bool {
        let parts = relativePath.lowercased().split(separator: "/", omittingEmptySubsequences: true).map { Array($0) }
        return Self.match(segments[...], parts[...])
    }

    static func match(_ pattern: ArraySlice<[Character]>, _ path: ArraySlice<[Character]>) -> Bool {
        guard let first = pattern.first else { return path.isEmpty }
        if first == ["*", "*"] {
            let rest = pattern.dropFirst()
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

    static func matchSegment(_ pattern: ArraySlice<Character>, _ text: ArraySlice<Character>) -> Bool {
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
