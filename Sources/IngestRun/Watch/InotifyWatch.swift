import IngestCore
import NativeSystem

#if os(Linux)
    import Foundation

    extension FolderWatcher {
        /// Watches with inotify until the feed stops; returns the poll interval to go on with instead when inotify
        /// cannot be used at all, having said why. Running out of watches is said, and polling takes over here.
        func watchWithInotify(roots: WatchRoots, present: [WatchTree.Root]) -> Double? {
            let watches: InotifyWatches
            do {
                watches = InotifyWatches(inotify: try Inotify(), feed: feed)
            } catch {
                notice(
                    "ingest: watch: cannot use inotify (\(error)); scanning the folders every "
                        + "\(JSONValue.format(WatchSettings.fallbackPoll)) s instead")
                return WatchSettings.fallbackPoll
            }
            for root in present {
                tree.scan(root, "", depth: 0, folder: { watches.add($0, root, $1, $2) }, file: { _ in })
            }
            ready.signal()
            var lastRead = FolderWatcher.wallNow()
            while !feed.isStopped, watches.outOfWatches == nil {
                let events: [InotifyEvent]
                do {
                    events = try watches.inotify.read(timeout: settings.tick)
                } catch {
                    notice("ingest: watch: \(error); scanning the folders instead")
                    return WatchSettings.fallbackPoll
                }
                let before = FolderWatcher.wallNow()
                var overflow = false
                for event in events {
                    if event.isOverflow { overflow = true } else { watches.handle(event, roots: roots) }
                }
                for change in roots.check(now: feed.now()) { watches.apply(change) }
                if overflow {
                    rescans.add(1, ordering: .relaxed)
                    notice(
                        "ingest: watch: inotify's event queue overflowed (fs.inotify.max_queued_events): events were "
                            + "lost; rescanning the folders")
                    // Events were lost after the last read: every folder is watched again (some may be new) and
                    // every file changed since that read is looked at.
                    scanAll(since: lastRead - Int64(WatchFeed.recentWindow * 1e9), watch: watches.add)
                }
                lastRead = before
                tickFeed()
            }
            if let outOfWatches = watches.outOfWatches {
                notice(
                    "ingest: watch: out of inotify watches (\(outOfWatches)): raise fs.inotify.max_user_watches "
                        + "(sysctl -w fs.inotify.max_user_watches=N); scanning the folders every "
                        + "\(JSONValue.format(WatchSettings.fallbackPoll)) s instead")
                poll(every: WatchSettings.fallbackPoll, since: lastRead, roots: roots)
            }
            return nil
        }
    }

    /// The watcher thread's inotify instance and its watches, by watch descriptor: which root each folder is under,
    /// its path relative to that root, and its depth. Used by that thread alone.
    final class InotifyWatches {
        private struct Folder {
            var root: WatchTree.Root
            var relativePath: String
            var depth: Int
        }

        let inotify: Inotify
        private let feed: WatchFeed
        private var tree: WatchTree { feed.tree }
        private var folders: [Int32: Folder] = [:]
        /// Set when `inotify_add_watch` said ENOSPC: the watcher falls back to polling.
        private(set) var outOfWatches: SystemError?

        init(inotify: Inotify, feed: WatchFeed) {
            self.inotify = inotify
            self.feed = feed
        }

        /// Watches the folder at `path` (again: the same descriptor comes back for a folder already watched).
        func add(_ path: String, _ root: WatchTree.Root, _ relative: String, _ depth: Int) {
            guard outOfWatches == nil else { return }
            do {
                folders[try inotify.watch(folder: path)] = Folder(root: root, relativePath: relative, depth: depth)
            } catch {
                if error.errno == SystemError.noSpace { outOfWatches = error }
            }
        }

        /// A root went away (nothing under it is watched any more), or a folder is at its path again or another
        /// folder than the one watched (watched and scanned whole: the journal keeps done files from being sent
        /// again).
        func apply(_ change: WatchRoots.Change) {
            switch change {
            case .lost(let root, _):
                forget(root)
            case .found(let root):
                forget(root)
                tree.scan(
                    root, "", depth: 0, folder: { self.add($0, root, $1, $2) },
                    file: { self.feed.found($0, since: nil) })
            }
        }

        /// Stops watching every folder of `root`, and waiting for its files.
        private func forget(_ root: WatchTree.Root) {
            for (watch, folder) in folders where folder.root.index == root.index {
                inotify.unwatch(watch)
                folders[watch] = nil
            }
            feed.removed(tree.path(root, ""), folder: true)
        }

        /// One event: a folder appears (watched and scanned) or goes (forgotten; a root going is told to `roots`),
        /// a file is written, closed, moved in or linked (noted, with what that says of its writer), or goes (no
        /// longer waited for).
        func handle(_ event: InotifyEvent, roots: WatchRoots) {
            guard let folder = folders[event.watch] else { return }
            guard let name = event.name, !name.isEmpty else {
                guard event.isFolderGone else { return }
                folders[event.watch] = nil
                if folder.relativePath.isEmpty {
                    forget(folder.root)
                    roots.lost(folder.root, why: event.folderGoneReason)
                }
                return
            }
            let relative = folder.relativePath.isEmpty ? name : folder.relativePath + "/" + name
            let path = tree.path(folder.root, relative)
            guard event.isFolder else {
                noteFile(event, root: folder.root, relative: relative, path: path)
                return
            }
            if event.isCreate || event.isMovedTo {
                let status = try? FileStatus(path: path, followLinks: false)
                guard tree.takesFolder(relative, depth: folder.depth + 1, status: status) else { return }
                // Files may have landed before the watch: the new folder is scanned at once.
                tree.scan(
                    folder.root, relative, depth: folder.depth + 1, folder: { self.add($0, folder.root, $1, $2) },
                    file: { self.feed.found($0, since: nil) })
            } else if event.isMovedFrom || event.isDelete {
                feed.removed(path, folder: true)
                let prefix = relative + "/"
                for (watch, inside) in folders
                where inside.root.index == folder.root.index
                    && (inside.relativePath == relative || inside.relativePath.hasPrefix(prefix))
                {
                    inotify.unwatch(watch)
                    folders[watch] = nil
                }
            }
        }

        private func noteFile(_ event: InotifyEvent, root: WatchTree.Root, relative: String, path: String) {
            guard tree.takesFile(relative) else { return }
            if event.isDelete || event.isMovedFrom {
                feed.removed(path, folder: false)
                return
            }
            guard let status = try? FileStatus(path: path, followLinks: true), status.kind == .regular,
                !tree.isIgnored(status)
            else { return }
            let writer: SettleTable.Writer?
            if event.isCloseWrite || event.isMovedTo {
                writer = .unknown
            } else if event.isModify {
                writer = .open
            } else if event.isCreate {
                // Created empty: its writer has just opened it. Created with content: a hard link to a finished
                // file (an SFTP server's link() + unlink()), or its writes' events follow.
                writer = status.size == 0 ? .open : .unknown
            } else {
                writer = nil
            }
            feed.note(tree.entry(root, relative, status: status), status: status, writer: writer)
        }
    }
#endif
