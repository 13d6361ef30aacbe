import Foundation
import IngestConfig
import IngestCore
import IngestStages

/// Consecutive stages that make outputs from the recording's frames (`poster`, `thumbnails`, `video … output:`)
/// share one demux and decode pass (`FramePass`); and a named output whose every upload an earlier run finished is
/// not made again (`StageContext.deliveredOutputs`).
extension FileRun {
    /// The positions of the frame stages that run in one pass from `position` on (those whose `when:` matches);
    /// just `position` when it is not a frame stage.
    func framePassGroup(from position: Int) -> [Int] {
        var group: [Int] = []
        for index in position..<plan.stages.count {
            let configured = plan.stages[index]
            guard let stage = configured.stage as? any FramePassStage, stage.joinsFramePass else { break }
            if let condition = configured.condition, !condition.matches(item) { continue }
            group.append(index)
        }
        return group.isEmpty ? [position] : group
    }

    /// Runs the group's stages in one pass; the file's report when it fails, nil to go on.
    func runFramePass(_ group: [Int]) -> ItemReport? {
        let members = group.map { position in
            let configured = plan.stages[position]
            return (stage: configured.stage as! any FramePassStage, context: context(for: configured, at: position))
        }
        let names = group.map { plan.stages[$0].name }
        plan.progress?.stage(id, names.joined(separator: "+"))
        let began = item.timings.clock.now
        do {
            try FramePass.run(members, item: item)
        } catch let failed as ItemFailed {
            // Stopped mid-pass: left in the journal as after a kill, as `runStage` does.
            if plan.cancellation.isCancelled { return interrupted(names[0], failed.failures) }
            return finish(.failed, failed.failures)
        } catch {
            return finish(.failed, [RuleFailure(stage: names[0], rule: .error, message: "\(error)")])
        }
        // The pass's time is the group's; each stage gets its share.
        let seconds = (item.timings.clock.now - began) / Double(names.count)
        for name in names { item.timings.stage(name, seconds: seconds) }
        return nil
    }

    /// Outputs whose every `upload: { output: NAME }` an earlier run finished, with what it journaled of them.
    func deliveredOutputs() -> [String: JSONValue] {
        guard let journaled else { return [:] }
        var delivered: [String: JSONValue] = [:]
        var pending = Set<String>()
        for (position, configured) in plan.stages.enumerated() {
            guard let name = (configured.stage as? UploadStage)?.outputName else { continue }
            guard let done = journaled.reusableResults(at: position),
                case .object(let result)? = done.outputs[configured.resultName ?? configured.name],
                let sent = result["output"]
            else {
                pending.insert(name)
                continue
            }
            delivered[name] = sent
        }
        for name in pending { delivered[name] = nil }
        return delivered
    }
}
