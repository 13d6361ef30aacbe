import Foundation
import IngestCore

extension Runner {
    /// `ingest watch`: runs the files already in `paths` (folders), then each file that lands in them once it has
    /// settled, through the same workers, journal and per-file path as `run`, until the run is cancelled (SIGINT,
    /// SIGTERM) or `onItem` throws. `notice` is told what the user must know (inotify out of watches).
    @discardableResult
    package func watch(
        paths: [String], watching: WatchSettings, notice: @escaping @Sendable (String) -> Void,
        onItem: (ItemReport) throws -> Void
    ) throws -> RunSummary {
        let ignored = ignoredPaths()
        let runFolder = try claimRunFolder()
        defer { if let runFolder { releaseRunFolder(runFolder) } }
        try session?.recordPipelineName()
        let tree = WatchTree(
            paths: paths, spec: pipeline.input, ignoredNames: watching.ignoredNames, ignoring: ignored)
        let walker = InputWalker(paths: paths, spec: pipeline.input, ignoring: ignored, cancellation: cancellation)
        let session = self.session
        let feed = WatchFeed(
            tree: tree, settings: watching, cancellation: cancellation, shard: shard, walker: walker,
            clock: settings.clock,
            beforeRetake: {
                try? session?.commit()
                session?.forgetUnknownRoots()
            })
        let watcher = FolderWatcher(
            feed: feed, settings: watching, notice: notice,
            health: { [metrics] missing in
                metrics?.setWatchProblem(
                    missing.isEmpty ? nil : "watched folder missing: " + missing.joined(separator: ", "))
            }, deferred: { [self] in takeDeferred() },
            leasePoll: session?.leasePollInterval ?? 1)
        watcher.start()
        var summary = RunSummary()
        let failure = drain(next: feed.next, ready: feed.takeNow, summary: &summary) { report in
            feed.finished(report)
            do {
                try onItem(report)
            } catch {
                feed.stop()
                throw error
            }
        }
        feed.stop()
        watcher.join()
        return try finishRun(summary, failure: failure)
    }
}
