import Foundation

/// `when:` on a stage — which files the stage applies to. Other files go past it untouched, as if it were not in
/// the list, so one pipeline can hold rules per kind of media (preflight checks durations of recordings only,
/// dimensions of photos only). Every condition given must hold.
package struct StageCondition: StageOptions, Sendable {
    package var extensions: [String]?
    package var paths: [String]?
    package var enabled: Bool?
    package init() {}

    package static var fields: [OptionField<StageCondition>] {
        [
            OptionField(
                "extensions", \.extensions, doc: "The stage applies to files with one of these extensions (any case)."),
            OptionField(
                "paths", \.paths, doc: "The stage applies to files whose path under the input root matches a glob."),
            OptionField(
                "enabled", \.enabled,
                doc: "`false`: the stage applies to no file — an opt-out a variable can set (`enabled: ${FIT:-true}`)."),
        ]
    }

    package func validate(at node: ConfigNode) throws {
        if extensions == nil && paths == nil && enabled == nil {
            throw node.error("'when' needs 'extensions', 'paths' or 'enabled'")
        }
        if extensions?.isEmpty == true || paths?.isEmpty == true {
            throw node.error("'when' with an empty list matches no file")
        }
    }

    /// True when the stage should run on `item`.
    package func matches(_ item: Item) -> Bool {
        if enabled == false { return false }
        if let extensions {
            let wanted = extensions.map { $0.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: ".")) }
            if !wanted.contains(item.fileExtension) { return false }
        }
        if let paths, !paths.contains(where: { Glob($0).matches(item.relativePath) }) { return false }
        return true
    }
}
