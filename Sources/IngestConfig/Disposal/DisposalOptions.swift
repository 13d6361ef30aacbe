import Foundation
import IngestCore

/// What becomes of an input file once the run is done with it: `on_success` (after the journal has it as done: moved
/// or deleted) and `on_failure` (moved aside with its report beside it). Left out of the config hash: changing it
/// changes no file's result.
package struct Disposal: Sendable, Equatable {
    package enum Success: Sendable, Equatable {
        /// Moved under this folder, keeping its path relative to the input folder it was found under.
        case moveTo(String)
        case delete
    }

    package var onSuccess: Success?
    /// Folder a failed file is moved under (its report written beside it as `NAME.report.json`).
    package var onFailureMoveTo: String?

    package init(onSuccess: Success? = nil, onFailureMoveTo: String? = nil) {
        self.onSuccess = onSuccess
        self.onFailureMoveTo = onFailureMoveTo
    }

    /// True when nothing is to be done with any file.
    package var isEmpty: Bool { onSuccess == nil && onFailureMoveTo == nil }

    /// The folders files are moved under.
    var targets: [String] {
        var folders: [String] = []
        if case .moveTo(let folder)? = onSuccess { folders.append(folder) }
        if let onFailureMoveTo { folders.append(onFailureMoveTo) }
        return folders
    }
}

/// `on_success:` in a pipeline file.
struct OnSuccessOptions: StageOptions, Sendable {
    var moveTo: String?
    var delete = false

    init() {}

    static var fields: [OptionField<OnSuccessOptions>] {
        [
            OptionField(
                "move_to", \.moveTo,
                doc:
                    "Folder an accepted file is moved under once the journal has it as done, keeping its path "
                    + "relative to the input folder (a rename, or copy-then-unlink across file systems); a name "
                    + "taken there fails the move, never replaced.",
                default: "left where it is"),
            OptionField(
                "delete", \.delete,
                doc: "Delete an accepted file once the journal has it as done (never before a verified upload).",
                default: "false"),
        ]
    }

    func validate(at node: ConfigNode) throws {
        if moveTo != nil && delete { throw node.error("on_success: give 'move_to' or 'delete: true', not both") }
        if moveTo == nil && !delete { throw node.error("on_success: give 'move_to: DIR' or 'delete: true'") }
        if let moveTo, moveTo.trimmingCharacters(in: .whitespaces).isEmpty {
            throw node.error("on_success: 'move_to' must not be empty")
        }
    }

    var success: Disposal.Success { moveTo.map(Disposal.Success.moveTo) ?? .delete }
}

/// `on_failure:` in a pipeline file.
struct OnFailureOptions: StageOptions, Sendable {
    var moveTo = ""

    init() {}

    static var fields: [OptionField<OnFailureOptions>] {
        [
            OptionField(
                "move_to", \.moveTo,
                doc:
                    "Folder a failed file is moved under (keeping its relative path), with its report beside it as "
                    + "`NAME.report.json`.",
                required: true)
        ]
    }

    func validate(at node: ConfigNode) throws {
        if moveTo.trimmingCharacters(in: .whitespaces).isEmpty {
            throw node.error("on_failure: 'move_to' must not be empty")
        }
    }
}
