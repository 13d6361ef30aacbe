/// `${VAR}` substitution in pipeline-file values, with the forms users know from Docker Compose:
/// `${VAR}`, `${VAR:-default}` (unset or empty), `${VAR-default}` (unset only), `${VAR:?message}` /
/// `${VAR?message}` (required), and `$$` for a literal `$`. A `$` followed by anything else stays as written, and
/// `{{ }}` templates are left alone: they are filled per file by later stages, not at load time.
package enum Interpolation {
    package enum Failure: Error, Equatable {
        /// `${NAME}` with no default, and NAME is not set.
        case missing(name: String, message: String?)
        /// `${` that is not closed, or a name that is not an identifier.
        case malformed(String)

        package var message: String {
            switch self {
            case .missing(let name, let message):
                return "environment variable '\(name)' is not set" + (message.map { ": \($0)" } ?? "")
                    + " (give a default with ${\(name):-value})"
            case .malformed(let text): return "malformed variable reference: \(text)"
            }
        }
    }

    /// The text with every reference replaced from `environment`.
    package static func expand(_ text: String, environment: [String: String]) throws -> String {
        guard text.contains("$") else { return text }
        let scalars = Array(text.unicodeScalars)
        var output = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            guard scalar == "$", index + 1 < scalars.count else {
                output.append(scalar)
                index += 1
                continue
            }
            let next = scalars[index + 1]
            if next == "$" {
                output.append("$")
                index += 2
                continue
            }
            guard next == "{" else {
                output.append(scalar)
                index += 1
                continue
            }
            // Find the matching `}`; braces nest so `${A:-${B}}` and `${A:-{{file.name}}}` work.
            var depth = 1
            var end = index + 2
            while end < scalars.count {
                if scalars[end] == "{" { depth += 1 }
                if scalars[end] == "}" {
                    depth -= 1
                    if depth == 0 { break }
                }
                end += 1
            }
            guard end < scalars.count else {
                throw Failure.malformed(
                    "\(ConfigNode.echo(String(String.UnicodeScalarView(scalars[index...])))) has no closing '}'")
            }
            let body = String(String.UnicodeScalarView(scalars[(index + 2)..<end]))
            output.append(contentsOf: try resolve(body, environment: environment).unicodeScalars)
            index = end + 1
        }
        return String(output)
    }

    /// The names of the variables `text` refers to (`${NAME}`, `${NAME:-…}` …), in order, each once; `$${` is
    /// no reference. For messages that must say where a value came from ("check FIREBASE_TOKEN").
    package static func variables(in text: String) -> [String] {
        var names: [String] = []
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            let after = rest[rest.index(after: dollar)...]
            if after.hasPrefix("$") {
                rest = after.dropFirst()
                continue
            }
            rest = after
            guard after.hasPrefix("{") else { continue }
            let name = String(after.dropFirst().prefix(while: isNameCharacter))
            if !name.isEmpty, !(name.first?.isNumber ?? true), !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// One `${…}` body: `NAME`, `NAME:-default`, `NAME-default`, `NAME:?message` or `NAME?message`.
    private static func resolve(_ body: String, environment: [String: String]) throws -> String {
        let nameEnd = body.firstIndex(where: { !isNameCharacter($0) }) ?? body.endIndex
        let name = String(body[..<nameEnd])
        guard let first = name.first, !first.isNumber else {
            throw Failure.malformed("\(ConfigNode.echo("${\(body)}")) does not start with a variable name")
        }
        let rest = body[nameEnd...]
        let value = environment[name]
        if rest.isEmpty {
            guard let value else { throw Failure.missing(name: name, message: nil) }
            return value
        }
        for (operatorText, emptyCounts) in [(":-", true), ("-", false), (":?", true), ("?", false)]
        where rest.hasPrefix(operatorText) {
            let argument = String(rest.dropFirst(operatorText.count))
            let usable = value.flatMap { emptyCounts && $0.isEmpty ? nil : $0 }
            if let usable { return usable }
            if operatorText.hasSuffix("-") { return try expand(argument, environment: environment) }
            throw Failure.missing(name: name, message: argument.isEmpty ? nil : argument)
        }
        throw Failure.malformed(
            "\(ConfigNode.echo("${\(body)}")): expected '}', ':-default' or '-default' after '\(name)'")
    }

    private static func isNameCharacter(_ character: Character) -> Bool {
        character == "_" || (character.isASCII && (character.isLetter || character.isNumber))
    }
}
