import Foundation
import IngestCore
import NativePostgres

/// The work queue: a worker leases each file before any stage runs, renews its leases while it works, and gives
/// them back as results are recorded or as it closes.
extension PostgresJournal {
    package var leasePollInterval: Double { min(max(leaseSeconds / 4, 0.1), 5) }

    /// The answer `leaseAhead` prepared, or the file leased alone (its record read with it, for `record`).
    package func lease(root: String, relativePath: String) throws -> JournalLease {
        let key = PostgresJournal.key(root, relativePath)
        if let answer = aheadLease(key) { return answer }
        try leaseAll([JournalFileKey(root: root, relativePath: relativePath)])
        return aheadLease(key) ?? .heldElsewhere(owner: "another worker")
    }

    package func endLease(root: String, relativePath: String) {
        _ = aheadRecord(PostgresJournal.key(root, relativePath))
        guard takeHeld(root, relativePath) else { return }
        _ = try? withConnection { connection in
            try connection.execute(PostgresJournal.releaseSQL, [root, relativePath, owner])
        }
    }

    static let releaseSQL = """
        UPDATE ingest_leases SET expires_at = NULL, finished_at = now()
        WHERE root = $1 AND relative_path = $2 AND owner = $3
        """

    /// Removes the file from `held`: true when this worker held it.
    func takeHeld(_ root: String, _ relativePath: String) -> Bool {
        stateLock.lock()
        defer { stateLock.unlock() }
        return held.remove(PostgresJournal.key(root, relativePath)) != nil
    }

    /// Renews this worker's leases every third of the lease time, on a connection of its own. In real time
    /// (`RealTime`), not the run's clock: a lease expires by PostgreSQL's `now()`.
    func startRenewing() {
        let interval = leaseSeconds / 3
        let thread = Thread { [weak self] in
            var connection: PostgresConnection?
            while let self {
                self.stateLock.lock()
                if !self.stopped { _ = self.stateLock.wait(until: RealTime.deadline(in: interval)) }
                let stop = self.stopped
                let busy = !self.held.isEmpty
                self.stateLock.unlock()
                if stop { return }
                guard busy else { continue }
                do {
                    if connection == nil || connection?.isOK == false {
                        connection = try PostgresConnection(conninfo: self.conninfo, secret: self.secret)
                    }
                    try connection?.execute(
                        """
                        UPDATE ingest_leases SET expires_at = now() + make_interval(secs => $2::float8)
                        WHERE owner = $1 AND expires_at IS NOT NULL
                        """, [self.owner, String(self.leaseSeconds)])
                } catch {
                    // The next round tries again; a lease lost meanwhile is taken over by another worker.
                    connection = nil
                }
            }
        }
        thread.name = "ingest-lease-renewal"
        renewer = thread
        thread.start()
    }

    /// Stops renewing and gives back any lease still held (files of a run that stopped early), so other workers
    /// take them over at once instead of after the lease time.
    package func close() throws {
        stateLock.lock()
        stopped = true
        let leftover = held
        held.removeAll()
        ahead.removeAll()
        stateLock.broadcast()
        stateLock.unlock()
        if !leftover.isEmpty {
            try withConnection { connection in
                try connection.execute(
                    "UPDATE ingest_leases SET expires_at = now() WHERE owner = $1 AND expires_at IS NOT NULL", [owner])
            }
        }
        poolLock.lock()
        pool.removeAll()
        poolLock.unlock()
        workLock = nil
    }
}
