import Foundation

extension Runner {
    /// A run of `pipeline` with `settings`, without a journal: every file is processed on every call.
    ///
    /// - Parameters:
    ///   - pipeline: A pipeline from `Pipeline.load(path:environment:offline:)` or
    ///     `Pipeline.parse(yaml:source:environment:offline:)`.
    ///   - settings: Where work files go, the probe's time limit, and the environment `${VAR}` and `env.NAME` read.
    public convenience init(pipeline: Pipeline, settings: RunSettings = RunSettings()) {
        self.init(pipeline: pipeline, settings: settings, progress: nil)
    }
}
