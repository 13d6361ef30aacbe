import ArgumentParser
import IngestCore

/// `ingest valdate …`: the parser only says the word was unexpected; a user who misspelt a command wants the one
/// they meant, as git and cargo say it.
enum UnknownCommand {
    /// The message for a first argument that names no command, or nil when the first argument is something else.
    static func message(arguments: [String]) -> String? {
        guard let word = arguments.first, !word.hasPrefix("-") else { return nil }
        let names = IngestCLI.configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
        guard !names.contains(word) else { return nil }
        var text = "ingest: '\(word)' is not a command"
        if let near = closestMatch(to: word, in: names) { text += " (did you mean '\(near)'?)" }
        return text + "\ncommands: " + names.dropLast().joined(separator: ", ") + " (see ingest --help)"
    }
}
