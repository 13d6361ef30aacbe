import IngestConfig
import IngestCore

extension PipelineLinter {
    /// A `validate` `max_bytes` before a `video`/`audio` stage with `fit`: the size rule rejects, on the original,
    /// files that `fit` would have brought under the limit. A size rule after the fitting stage checks what is sent.
    /// A stage with `output:` fits its output (a proxy), not the file, so a size rule before it rejects nothing `fit`
    /// would save.
    func sizeRulesBeforeFit() -> [(location: SourceLocation, message: String)] {
        var found: [(location: SourceLocation, message: String)] = []
        for (index, entry) in stages.enumerated() where entry.name == "validate" {
            guard let maxBytes = entry.optionNode("max_bytes") else { continue }
            let fitting = stages[(index + 1)...].first { later in
                ["video", "audio"].contains(later.name ?? "") && later.optionNode("fit") != nil
                    && later.optionNode("output") == nil
            }
            guard let fitting, let stageName = fitting.name else { continue }
            let line = fitting.configured?.location.line ?? fitting.item.location.line
            found.append(
                (
                    maxBytes.location,
                    "validate's max_bytes rejects files before \(stageName): { fit } (line \(line)) could bring them "
                        + "under the limit; check the size in a validate after \(stageName), which checks the file "
                        + "that is sent"
                ))
        }
        return found
    }
}
