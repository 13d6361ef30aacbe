import Foundation

@testable import IngestJournal

extension PostgresJournal {
    /// Time passing for this worker's leases without a wait: each live lease's expiry (`expires_at`, read against
    /// the database's `now()`, the one clock every worker shares) moves `seconds` earlier, as if that long had gone
    /// by with no renewal. The worker must not renew (`renews: false`), as a stopped worker does not.
    func ageLeases(by seconds: Double) throws {
        try withConnection { connection in
            _ = try connection.execute(
                """
                UPDATE ingest_leases SET expires_at = expires_at - make_interval(secs => $2::float8)
                WHERE owner = $1 AND expires_at IS NOT NULL
                """, [owner, String(seconds)])
        }
    }
}
