import IngestCore
import NativeSystem

/// Whether each folder given to `ingest watch` (a root) is there, and which folder it is. A root can go away and
/// come back while the watch runs: a backup job or `rsync --delete-after` removes and makes it again, a mount point
/// is unmounted and mounted again, a symlink is pointed at another folder. Watches follow inodes, not paths, so the
/// watcher must notice each of these itself: a root lost (by an inotify event, or by a look every `checkInterval`
/// seconds) is said on standard error and in `/healthz`, and looked for again until a folder is at its path; a
/// folder found at its path, or a different folder than the one watched, is watched and scanned afresh (the journal
/// keeps files already done from being sent again). Used by the watcher thread alone.
final class WatchRoots {
    /// Seconds between two looks at the roots' paths (`stat`, one per root).
    static let checkInterval = 2.0

    /// What a look found of one root.
    enum Change {
        /// It is gone (why: "deleted", "no such file or directory" …): stop watching what was under it.
        case lost(WatchTree.Root, why: String)
        /// A folder is at its path again, or another folder than the one watched: watch it and scan it whole.
        case found(WatchTree.Root)
    }

    private struct Identity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    private let roots: [WatchTree.Root]
    /// The folder watched for each root (by index); nil while it is missing.
    private var watched: [Int: Identity] = [:]
    /// The roots that were mount points when first seen (on another file system than the folder they are in): one
    /// found on its parent's file system again is an unmounted mount point, missing until it is mounted again.
    private var mountPoints: Set<Int> = []
    /// Why each missing root is missing, by index.
    private var missing: [Int: String] = [:]
    private var nextCheck = 0.0
    private let notice: @Sendable (String) -> Void
    /// Told the missing roots and why (empty: all there), each time that changes: `/healthz`'s answer.
    private let health: @Sendable ([String]) -> Void

    init(
        roots: [WatchTree.Root], notice: @escaping @Sendable (String) -> Void,
        health: @escaping @Sendable ([String]) -> Void
    ) {
        self.roots = roots
        self.notice = notice
        self.health = health
    }

    /// The roots there now (the ones to watch and scan), after saying which are not.
    func start(now: Double) -> [WatchTree.Root] {
        var present: [WatchTree.Root] = []
        for root in roots {
            switch identity(of: root) {
            case .folder(let identity):
                watched[root.index] = identity
                present.append(root)
                if let parent = try? FileStatus(path: root.directory + "/..", followLinks: true),
                    parent.device != identity.device
                {
                    mountPoints.insert(root.index)
                }
            case .absent(let why):
                missing[root.index] = why
                notice(
                    "ingest: watch: \(root.given): the watched folder is not there (\(why)); looking for it every "
                        + "\(JSONValue.format(WatchRoots.checkInterval)) s")
            }
        }
        nextCheck = now + WatchRoots.checkInterval
        reportHealth()
        return present
    }

    /// An event said the folder watched for `root` went away (`why`): it is missing from now on, and its path is
    /// looked at again at once (it may be back already).
    func lost(_ root: WatchTree.Root, why: String) {
        guard watched.removeValue(forKey: root.index) != nil else { return }
        markMissing(root, why: why)
        nextCheck = 0
    }

    /// Looks at every root's path when due (every `checkInterval` seconds, or at once after a loss): what changed.
    func check(now: Double) -> [Change] {
        guard now >= nextCheck else { return [] }
        nextCheck = now + WatchRoots.checkInterval
        var changes: [Change] = []
        for root in roots {
            let found = identity(of: root)
            switch (found, watched[root.index]) {
            case (.folder(let identity), let known?) where identity == known:
                continue
            case (.folder(let identity), let known):
                watched[root.index] = identity
                if known != nil {
                    notice(
                        "ingest: watch: \(root.given): now leads to another folder (a symlink or a mount changed); "
                            + "watching and scanning that one")
                } else {
                    missing[root.index] = nil
                    notice(
                        "ingest: watch: \(root.given): the watched folder is back; watching it again and taking the "
                            + "files in it (files already done are not sent again)")
                }
                changes.append(.found(root))
            case (.absent(let why), _?):
                watched[root.index] = nil
                markMissing(root, why: why)
                changes.append(.lost(root, why: why))
            case (.absent, nil):
                continue
            }
        }
        if !changes.isEmpty { reportHealth() }
        return changes
    }

    private func markMissing(_ root: WatchTree.Root, why: String) {
        missing[root.index] = why
        notice(
            "ingest: watch: \(root.given): the watched folder is gone (\(why)); looking for it every "
                + "\(JSONValue.format(WatchRoots.checkInterval)) s, and /healthz says so until it is back")
        reportHealth()
    }

    private func reportHealth() {
        health(roots.compactMap { root in missing[root.index].map { "\(root.given) (\($0))" } })
    }

    /// What is at a root's path: a folder, or why there is none.
    private enum Look {
        case folder(Identity)
        case absent(String)
    }

    /// The folder at `root`'s path (symlinks followed), or why there is none.
    private func identity(of root: WatchTree.Root) -> Look {
        do {
            let status = try FileStatus(path: root.directory, followLinks: true)
            guard status.kind == .directory else { return .absent("not a folder") }
            if mountPoints.contains(root.index),
                try FileStatus(path: root.directory + "/..", followLinks: true).device == status.device
            {
                return .absent("not mounted")
            }
            return .folder(Identity(device: status.device, inode: status.inode))
        } catch {
            return .absent(error.reason)
        }
    }
}
