#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if os(Linux)
    /// One inotify instance (`inotify_init1`); `deinit` closes its descriptor, which drops every watch. Events are
    /// read with a timeout (`poll(2)` first), so the thread reading them can notice that the run was cancelled.
    package final class Inotify {
        private let descriptor: Int32
        /// One read's buffer: room for many events (each is 16 bytes plus its name, padded).
        private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

        /// What the watcher needs to know of a folder: files written, closed, moved in or out, created (a hard link
        /// too), deleted, and the folder itself going away. `IN_EXCL_UNLINK`: no events for names already unlinked.
        private static let folderMask: UInt32 =
            UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_CREATE)
            | UInt32(IN_DELETE) | UInt32(IN_MODIFY) | UInt32(IN_ATTRIB) | UInt32(IN_DELETE_SELF)
            | UInt32(IN_MOVE_SELF) | UInt32(IN_ONLYDIR) | UInt32(IN_EXCL_UNLINK)

        /// Throws `SystemError` (`inotify_init1`): EMFILE when `fs.inotify.max_user_instances` is reached.
        package init() throws(SystemError) {
            let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard descriptor >= 0 else { throw SystemError(call: "inotify_init1", path: "", errno: errno) }
            self.descriptor = descriptor
        }

        deinit { close(descriptor) }

        /// Watches the folder at `path` (its entries, not its subfolders' entries); the watch descriptor. ENOSPC
        /// (`SystemError.noSpace`) means `fs.inotify.max_user_watches` is reached.
        package func watch(folder path: String) throws(SystemError) -> Int32 {
            let watch = inotify_add_watch(descriptor, path, Inotify.folderMask)
            guard watch >= 0 else { throw SystemError(call: "inotify_add_watch", path: path, errno: errno) }
            return watch
        }

        /// Stops watching (best effort: a folder already gone has lost its watch by itself).
        package func unwatch(_ watch: Int32) { _ = inotify_rm_watch(descriptor, watch) }

        /// The events queued, after waiting up to `timeout` seconds for the first; empty when none came in time.
        /// A signal interrupting the wait returns what is there (nothing).
        package func read(timeout: Double) throws(SystemError) -> [InotifyEvent] {
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(max(0, min(timeout, 3600)) * 1000)
            let ready = poll(&request, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { return [] }
                throw SystemError(call: "poll", path: "inotify", errno: errno)
            }
            guard ready > 0 else { return [] }
            let count = buffer.withUnsafeMutableBytes { raw in Glibc.read(descriptor, raw.baseAddress, raw.count) }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { return [] }
                throw SystemError(call: "read", path: "inotify", errno: errno)
            }
            return parse(count: count)
        }

        /// The events in the first `count` bytes of `buffer`: `struct inotify_event` followed by its padded name.
        private func parse(count: Int) -> [InotifyEvent] {
            var events: [InotifyEvent] = []
            let header = MemoryLayout<inotify_event>.size
            var offset = 0
            buffer.withUnsafeBytes { raw in
                while offset + header <= count {
                    let watch = raw.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                    let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    let nameStart = offset + header
                    let nameBytes = raw[nameStart..<min(count, nameStart + length)]
                    let name = Array(nameBytes.prefix { $0 != 0 })
                    events.append(InotifyEvent(watch: watch, mask: mask, rawName: name))
                    offset = nameStart + length
                }
            }
            return events
        }
    }

    /// One event: which watch (folder), what happened, and the name inside that folder (empty for the folder itself).
    package struct InotifyEvent: Sendable, Equatable {
        package var watch: Int32
        package var mask: UInt32
        /// The name's bytes; `name` is nil when they are not UTF-8.
        package var rawName: [UInt8]

        package init(watch: Int32, mask: UInt32, rawName: [UInt8]) {
            self.watch = watch
            self.mask = mask
            self.rawName = rawName
        }

        package var name: String? { String(validating: rawName, as: UTF8.self) }

        private func has(_ flag: Int32) -> Bool { mask & UInt32(bitPattern: flag) != 0 }
        private func has(_ flag: Int) -> Bool { mask & UInt32(truncatingIfNeeded: flag) != 0 }

        /// The kernel's queue overflowed (`fs.inotify.max_queued_events`): events were lost.
        package var isOverflow: Bool { has(IN_Q_OVERFLOW) }
        package var isFolder: Bool { has(IN_ISDIR) }
        /// Created: a new file, folder or hard link (`link(2)`, as SFTP servers finish an upload).
        package var isCreate: Bool { has(IN_CREATE) }
        /// Written to: a writer on this machine has it open.
        package var isModify: Bool { has(IN_MODIFY) }
        /// Its writer closed it.
        package var isCloseWrite: Bool { has(IN_CLOSE_WRITE) }
        /// Renamed into the watched folder.
        package var isMovedTo: Bool { has(IN_MOVED_TO) }
        /// Renamed out of the watched folder.
        package var isMovedFrom: Bool { has(IN_MOVED_FROM) }
        package var isDelete: Bool { has(IN_DELETE) }
        package var isAttributes: Bool { has(IN_ATTRIB) }
        /// The watched folder itself was deleted or moved, its file system unmounted, or its watch removed
        /// (`IN_IGNORED`).
        package var isFolderGone: Bool {
            has(IN_DELETE_SELF) || has(IN_MOVE_SELF) || has(IN_UNMOUNT) || has(IN_IGNORED)
        }
        /// How the watched folder itself went away, in words (for an event where `isFolderGone`).
        package var folderGoneReason: String {
            if has(IN_DELETE_SELF) { return "deleted" }
            if has(IN_MOVE_SELF) { return "moved away" }
            if has(IN_UNMOUNT) { return "its file system was unmounted" }
            return "its watch was removed"
        }
    }
#endif

extension SystemError {
    /// `inotify_add_watch`: `fs.inotify.max_user_watches` reached.
    package static let noSpace = ENOSPC
}
