import Foundation
import IngestCore

/// How `ingest watch` decides that a file has landed, and how it learns of new files.
package struct WatchSettings: Sendable {
    /// Seconds a file's size and modification time must stay the same before it is taken.
    package var settle: Double
    /// Scan the folders every this many seconds instead of using inotify (NFS/SMB mounts); nil: inotify.
    package var poll: Double?
    /// Names (globs on the last path segment, case ignored) that writers use while copying: never taken.
    package var ignoredNames: [String]

    /// `.*`, `*.part`, `*.tmp`, `*.crdownload`, `~$*`: hidden files and what rsync, browsers, curl and Office
    /// write before the final rename.
    package static let defaultIgnoredNames = [".*", "*.part", "*.tmp", "*.crdownload", "~$*"]
    package static let defaultSettle = 5.0
    /// The scan interval when inotify runs out of watches and the watcher falls back to polling.
    package static let fallbackPoll = 10.0

    package init(settle: Double = WatchSettings.defaultSettle, poll: Double? = nil, ignoredNames: [String]? = nil) {
        self.settle = settle
        self.poll = poll
        self.ignoredNames = ignoredNames ?? WatchSettings.defaultIgnoredNames
    }

    /// How often pending files are looked at again: often enough that a file is taken soon after it settled.
    var tick: Double { min(0.25, max(0.02, settle / 4)) }
}
