import Foundation
import NativeSystem

/// Who is working on the journal's `running` files right now, so `ingest status` beside a live run says "in
/// progress (held by pid N)" rather than calling them interrupted. Taken once per `status`.
package struct JournalHolders: Sendable {
    /// Live runs of a SQLite journal, by run ID: what to call the holder (`pid 123`).
    var runs: [String: String] = [:]
    /// Files under a live PostgreSQL lease (`root\0relative path`): what to call the holder.
    var files: [String: String] = [:]

    package init() {}

    /// Who holds a `running` file, or nil when no live process does (it was interrupted).
    package func holder(of record: JournalRecord) -> String? {
        guard record.state == .running else { return nil }
        if let runID = record.runID, let holder = runs[runID] { return holder }
        return files[record.root + "\u{0}" + record.relativePath]
    }
}

extension FileLock {
    /// Writes `<pid> <run ID>` into the lock file (through a descriptor of its own: the lock stays), so `status`
    /// can tell which run's files are in flight.
    func recordOwner(runID: String) {
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        defer { try? handle.close() }
        try? handle.truncate(atOffset: 0)
        try? handle.write(contentsOf: Data("\(CurrentProcess.id) \(runID)\n".utf8))
    }

    /// The process named in the lock file at `path`, when it is alive and holds the lock now: a run that ended, or
    /// was killed, leaves its pid behind but not its lock.
    static func liveOwner(of path: String) -> (pid: Int32, runID: String)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let words = text.split(whereSeparator: \.isWhitespace)
        guard words.count == 2, let pid = Int32(words[0]), pid > 0 else { return nil }
        guard let inode = try? FileStatus(path: path, followLinks: true).inode else { return nil }
        // /proc/locks lists every flock with its holder's pid and the file's inode: asking it takes no lock, so
        // a run starting at this moment is not turned away.
        if let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) {
            let held = locks.split(separator: "\n").contains { line in
                let fields = line.split(separator: " ").filter { $0 != "->" }
                guard fields.count >= 6, fields[1] == "FLOCK", Int32(fields[4]) == pid else { return false }
                return fields[5].split(separator: ":").last.flatMap { UInt64($0) } == inode
            }
            return held ? (pid, String(words[1])) : nil
        }
        return Processes.isAlive(pid) ? (pid, String(words[1])) : nil
    }
}

extension SQLiteJournal {
    /// The run holding this journal's writer lock, if it is alive.
    package func liveHolders() throws -> JournalHolders {
        var holders = JournalHolders()
        if let owner = FileLock.liveOwner(of: path + ".lock") { holders.runs[owner.runID] = "pid \(owner.pid)" }
        return holders
    }
}

extension PostgresJournal {
    /// The files under a live lease, and the worker holding each (`host:pid:run`, shown as `pid N on host`).
    package func liveHolders() throws -> JournalHolders {
        var holders = JournalHolders()
        try withConnection { connection in
            let rows = try connection.execute(
                "SELECT root, relative_path, owner FROM ingest_leases WHERE expires_at > now()")
            for row in rows {
                let owner = (row[2] ?? "").split(separator: ":").map(String.init)
                let shown =
                    owner.count >= 3
                    ? "pid \(owner[owner.count - 2]) on \(owner.dropLast(2).joined(separator: ":"))"
                    : owner.joined(separator: ":")
                holders.files[(row[0] ?? "") + "\u{0}" + (row[1] ?? "")] = shown
            }
        }
        return holders
    }
}
