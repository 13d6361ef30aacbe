/// Thrown by a stage that found its ticket expired: a signed URL or POST policy, rendered from the answer an earlier
/// stage saved under `as:`, that the server refused as expired. The stage does not renew it itself: the run
/// (`FileRun`) runs the stage that saved that answer again, as a journaled step of its own, and then this stage once
/// more. When no earlier stage can renew it, the file fails with `failure`.
package struct TicketExpired: Error, Sendable, CustomStringConvertible {
    /// The stage that found it expired (`upload`, `save`).
    package var stage: String
    /// The `as:` names the expired values were rendered from, in the order the templates name them: the stage that
    /// saved the first of them that can be asked again renews the ticket.
    package var results: [String]
    /// What expired, for people: `the signed URL`, `the result URL`.
    package var what: String
    /// The server's words (or the status) that said so.
    package var said: String
    /// A line added to the file's notes when the ticket is renewed; nil for none.
    package var note: String?
    /// How the file fails when no earlier stage can renew the ticket.
    package var failure: ItemFailed

    package init(stage: String, results: [String], what: String, said: String, note: String? = nil, failure: ItemFailed)
    {
        self.stage = stage
        self.results = results
        self.what = what
        self.said = said
        self.note = note
        self.failure = failure
    }

    /// `upload: the signed URL expired (403: Request has expired)`.
    package var description: String { "\(stage): \(what) expired (\(said))" }

    /// The `as:` names a template's variables start with (`ticket` of `{{ticket.upload_url}}`), in order.
    package static func resultNames(_ variables: [String]) -> [String] {
        variables.map { String($0.split(separator: ".").first ?? Substring($0)) }
    }
}
