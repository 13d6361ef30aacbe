import IngestConfig
import IngestCore
import Logging

/// Ticket renewal, a step of the file's run: a stage that finds the signed URL (or POST policy) it rendered from an
/// earlier stage's answer expired throws `TicketExpired`; the run then runs that earlier stage again — logged with
/// `-v`, its new answer journaled in place of the old one — and runs the stage once more.
extension FileRun {
    /// Renewals of a ticket per run of a stage: a fresh ticket refused again fails the file.
    static let maxRenewals = 1

    /// Runs the stage, renewing its ticket when it throws `TicketExpired`. `renewable`: the stages done so far whose
    /// answer can be asked for again, by `as:` name.
    func runRenewingTicket(
        _ configured: ConfiguredStage, at position: Int, context: StageContext, renewable: [String: Int]
    ) throws -> StageOutcome {
        var context = context
        var renewals = 0
        while true {
            do {
                return try configured.stage.run(item, context: context)
            } catch let expired as TicketExpired {
                guard renewals < Self.maxRenewals, let name = expired.results.first(where: { renewable[$0] != nil }),
                    let producer = renewable[name]
                else { throw expired.failure }
                try renewTicket(name, madeAt: producer, for: expired)
                renewals += 1
                context.ticketRenewed = true
            }
        }
    }

    /// Runs again the stage at `position`, which saved the ticket under `name`, and journals its new answer before
    /// the stage that found the old one expired uses it.
    private func renewTicket(_ name: String, madeAt position: Int, for expired: TicketExpired) throws {
        let producer = plan.stages[position]
        let why = "\(expired.what) expired (\(expired.said))"
        plan.settings.logger?.info(
            "\(why): renewing the ticket '\(name)' by running stage \(position + 1) (\(producer.name)) again",
            metadata: ["file": .string(item.path), "stage": .string(expired.stage), "renews": .string(name)])
        if let note = expired.note { item.addNote(note) }
        var context = context(for: producer, at: position)
        // Its earlier call was answered (the ticket being renewed is that answer): nothing to verify or echo.
        context.mayHaveRunBefore = false
        let before = item.facts
        if case .skip(let reason) = try producer.stage.renew(item, context: context) {
            throw ItemFailed(
                stage: expired.stage, rule: .expired,
                message: "\(expired.what) expired and renewing the ticket '\(name)' was refused: \(reason)")
        }
        try journaled?.stageRenewed(item, stage: producer, position: position, factsBefore: before)
    }
}
