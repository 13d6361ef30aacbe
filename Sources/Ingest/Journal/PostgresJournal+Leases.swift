import Foundation
import IngestNative

/// The work queue: a worker leases each file before any stage runs, renews its leases while it works, and gives
/// them back as results are recorded or as it closes.
extension PostgresJournal {
    public var leasePollInterval: Double { min(max(leaseSeconds / 4, 0.1), 5) }

    public func lease(root: String, relativePath: String) throws -> JournalLease {
        let answer: JournalLease = try transaction { connection in
            try connection.execute(
                "INSERT INTO ingest_leases(root, relative_path, owner) VALUES ($1, $2, '') ON CONFLICT DO NOTHING",
                [root, relativePath])
            let rows = try connection.execute(
                """
                SELECT owner, expires_at IS NOT NULL AND expires_at > now(), expires_at IS NULL
                    AND finished_at >= $3::timestamptz
                FROM ingest_leases WHERE root = $1 AND relative_path = $2 FOR UPDATE SKIP LOCKED
                """, [root, relativePath, runStart])
            // Locked: another worker is taking or giving back this very file right now.
            guard let row = rows.first else { return .heldElsewhere(owner: "another worker") }
            let holder = row[0] ?? ""
            if holder != owner && row[1] == "t" { return .heldElsewhere(owner: holder) }
            if holder != owner && row[2] == "t" { return .handledElsewhere(owner: holder) }
            try connection.execute(
                """
                UPDATE ingest_leases SET owner = $3, expires_at = now() + make_interval(secs => $4::float8),
                    finished_at = NULL
                WHERE root = $1 AND relative_path = $2
                """, [root, relativePath, owner, String(leaseSeconds)])
            return .granted
        }
        if answer == .granted {
            stateLock.lock()
            held.insert(PostgresJournal.key(root, relativePath))
            stateLock.unlock()
        }
        return answer
    }

    public func endLease(root: String, relativePath: String) {
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

    /// Renews this worker's leases every third of the lease time, on a connection of its own.
    func startRenewing() {
        let interval = leaseSeconds / 3
        let thread = Thread { [weak self] in
            var connection: PostgresConnection?
            while let self {
                self.stateLock.lock()
                if !self.stopped { _ = self.stateLock.wait(until: Date(timeIntervalSinceNow: interval)) }
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
    public func close() throws {
        stateLock.lock()
        stopped = true
        let leftover = held
        held.removeAll()
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
