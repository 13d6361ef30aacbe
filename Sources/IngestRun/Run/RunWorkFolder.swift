import Foundation
import IngestCore
import IngestJournal
import IngestStages
import NativeSystem

/// The part of the work folder one run owns: `<work>/run-<pid>-<8 hex>`, held for the whole run by an exclusive
/// lock on `<work>/run-<pid>-<8 hex>.lock` (which also names the pid). Runs sharing a work folder — each with its
/// own journal, or none — never touch each other's files: a run removes its own folder when it ends, and a folder
/// left by a killed run only once its lock is free (the kernel drops a dead process's lock).
final class RunWorkFolder {
    /// The shared work folder (`--work-dir`).
    let base: String
    /// This run's folder inside it: where stages write their work files.
    let path: String
    private var lock: FileLock?

    static let prefix = "run-"
    static let lockSuffix = ".lock"

    /// Creates the run's folder (and the shared one, marked as ingest's, when missing), after removing the folders
    /// of runs that died; never removes anything in `keeping` (a journal put inside the work folder).
    init(base: String, keeping kept: [String] = []) throws {
        self.base = base
        try WorkFolder.prepare(base)
        let name = RunWorkFolder.prefix + "\(CurrentProcess.id)-" + UUID().uuidString.prefix(8).lowercased()
        path = base + "/" + name
        do {
            // The lock first, then the folder: a folder whose lock file is missing belongs to no live run.
            let lock = try FileLock(path: path + RunWorkFolder.lockSuffix)
            lock.recordPID()
            self.lock = lock
            try FileSystem.makeFolder(path)
        } catch {
            let what = error.call == "mkdir" ? "create" : "lock"
            throw JournalError("cannot \(what) this run's work folder \(path): \(error.reason)")
        }
        RunWorkFolder.removeDeadRuns(in: base, keeping: kept)
    }

    deinit { remove() }

    /// Removes the folder and then its lock file, and lets the lock go.
    func remove() {
        guard let lock else { return }
        try? FileManager.default.removeItem(atPath: path)
        try? FileSystem.remove(path + RunWorkFolder.lockSuffix)
        withExtendedLifetime(lock) { self.lock = nil }
    }

    /// Removes the `run-*` folders of runs that are gone: each one's lock is taken first (without waiting), so a
    /// live run's folder is left alone.
    static func removeDeadRuns(in base: String, keeping kept: [String]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        for name in names where name.hasPrefix(prefix) && !name.hasSuffix(lockSuffix) {
            let folder = base + "/" + name
            if kept.contains(where: { $0 == folder || WorkFolder.contains($0, folder: folder) }) { continue }
            if FileManager.default.fileExists(atPath: folder + lockSuffix) {
                removeIfDead(lockPath: folder + lockSuffix, folder: folder)
            } else {
                // A run makes its lock file before its folder and removes it after: no lock file, no live owner.
                try? FileManager.default.removeItem(atPath: folder)
            }
        }
        // Lock files left without a folder (a run killed between the two steps of its start or clean-up).
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(lockSuffix) {
            let folder = base + "/" + String(name.dropLast(lockSuffix.count))
            if !FileManager.default.fileExists(atPath: folder) {
                removeIfDead(lockPath: base + "/" + name, folder: nil)
            }
        }
    }

    /// Takes the lock at `lockPath` if it is free and removes `folder` and the lock file. A lock file with no pid
    /// in it yet may be a run starting at this very moment: it is left alone unless it is a minute old.
    private static func removeIfDead(lockPath: String, folder: String?) {
        guard let lock = try? FileLock(path: lockPath, create: false),
            let status = try? FileStatus(path: lockPath, followLinks: true)
        else { return }
        withExtendedLifetime(lock) {
            // On the kernel's clock, which stamped the file's mtime (`RealTime`).
            let age = Double(RealTime.fileTimeNow - status.modified) / 1e9
            guard status.size > 0 || age > 60 else { return }
            if let folder { try? FileManager.default.removeItem(atPath: folder) }
            try? FileSystem.remove(lockPath)
        }
    }
}

extension Runner {
    /// The work folder and the journal's files (with the lock files beside them): never inputs.
    func ignoredPaths() -> [String] {
        [settings.workDirectory, settings.workDirectory + ".lock"] + (session?.localFiles ?? [])
    }

    /// Gives the run a folder of its own in the work folder, when it writes work files or keeps a journal (whose
    /// run then clears the folders killed runs left), and points `settings.workDirectory` at it.
    func claimRunFolder() throws -> RunWorkFolder? {
        guard journal != nil || stages.contains(where: \.writesWorkFiles) else { return nil }
        let folder = try RunWorkFolder(base: settings.workDirectory, keeping: session?.localFiles ?? [])
        settings.workDirectory = folder.path
        return folder
    }

    /// Removes the run's folder once its files are finished.
    func releaseRunFolder(_ folder: RunWorkFolder) {
        folder.remove()
        settings.workDirectory = folder.base
    }
}

extension FileLock {
    /// Writes this process's pid into the lock file (through a descriptor of its own: the lock stays). A lock
    /// file with a pid in it belongs to a run that has finished starting.
    func recordPID() {
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        defer { try? handle.close() }
        try? handle.write(contentsOf: Data("\(CurrentProcess.id)\n".utf8))
    }
}
