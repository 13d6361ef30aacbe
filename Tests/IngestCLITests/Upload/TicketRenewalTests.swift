import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// Ticket renewal is a step of the file's run, not a call hidden in the upload: a stage refused because the signed
/// URL it rendered from an earlier answer expired throws `TicketExpired`, and the run renews the ticket by running the
/// stage that made it again, then the refused stage once more. `-v` says so, naming both stages.
@Suite(.serialized) struct TicketRenewalTests {
    @Test func verboseOutputNamesTheRenewalOfAnExpiredUploadTicket() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/api/upload-url", "action": "expired_ticket", "times": 1}]"#)
        let folder = try TemporaryFolder("renew-verbose")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/frank/clip.mov", size: 200_000)
        let pipeline = try folder.file("p.yml", UploadPipelineTests.hockeyPipeline(backend.base))
        let (result, reports) = try runIngestWithReport(
            pipeline, [folder.path + "/in", "-v"], in: folder.path, environment: environmentWithoutProxies())
        #expect(result.status == 0, "\(result.stderr)\(reports)")
        #expect(try backend.counts("tickets") == ["/api/upload-url": 2])
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let renewal = lines.filter { $0.contains("renewing the ticket") }
        #expect(renewal.count == 1, "\(result.stderr)")
        let line = renewal.first ?? ""
        #expect(line.hasPrefix("ingest: upload \(folder.path)/in/frank/clip.mov: the signed URL expired ("), "\(line)")
        #expect(line.hasSuffix(": renewing the ticket 'ticket' by running stage 1 (request) again"), "\(line)")
        // The renewal's own call is logged under its stage, after the line that says why.
        let after = lines.drop { !$0.contains("renewing the ticket") }
        #expect(after.contains { $0.contains("ingest: request ") && $0.contains("POST ") }, "\(result.stderr)")
    }
}

extension SeedPipelinesFirestore {
    /// A result URL refused as expired (GCS answers 400 to one) is renewed: the run reads the job again (the `poll`
    /// stage runs again) for fresh URLs and saves the feedback; `-v` and the report say so.
    @Test func anExpiredResultURLIsRenewedByReadingTheJobAgain() throws {
        let backend = try Self.backend(
            faults: #"[{"method": "GET", "path": "/results/", "action": "status", "status": 400, "times": 1}]"#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed000-renew-results")
        defer { folder.remove() }
        try copySample("good/plain.mov", to: folder.path + "/in/shift.mov")
        let result = try Self.run(["run", Self.pipeline, "in", "-v"], in: folder, Self.environment(backend))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/in/shift.parent.txt"))
        #expect(FileManager.default.fileExists(atPath: folder.path + "/in/shift.coach.txt"))
        #expect(result.stdout.contains("save: renewed the result URLs after 400"), "\(result.stdout)")
        let renewal = result.stderr.split(separator: "\n").filter { $0.contains("renewing the ticket") }
        #expect(renewal.count == 1, "\(result.stderr)")
        #expect(
            renewal.first?.hasSuffix("renewing the ticket 'analysis' by running stage 8 (poll) again") == true,
            "\(result.stderr)")
        #expect(renewal.first?.hasPrefix("ingest: save in/shift.mov: the result URL expired (400") == true)
    }
}
