import IngestCore

/// The stages' one way to the prober: `validate`, `probe`, `geohash`, the transcoders and `{{probe.…}}` templates ask
/// the context, not `Prober`, so a file is probed once however many of them read it.
extension StageContext {
    /// The item's probe, computed once and cached on the item (validate, probe and geohash share it).
    package func probe(_ item: Item, stage: String) throws -> ProbeResult {
        if let cached = item.probeResult { return cached }
        if let failed = item.probeError { throw failed }
        do {
            let result = try Prober.probe(path: item.artifact, timeout: settings.probeTimeout)
            item.probeResult = result
            return result
        } catch let error as ProbeError {
            let failed = ItemFailed(stage: stage, rule: error.rule, message: error.message)
            item.probeError = failed
            throw failed
        }
    }
}
