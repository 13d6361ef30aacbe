import Foundation
import IngestCore
import NativeFFmpeg

/// A stage that makes a named output from the recording's frames (`poster`, `thumbnails`, `video` with `output:`).
/// Consecutive ones share one demux and decode pass: the runner gives them to `FramePass.run` together.
package protocol FramePassStage: Stage {
    /// False when this stage does not make an output beside the file (a `video` that replaces it).
    var joinsFramePass: Bool { get }
    /// The stage's part of the pass for `item`; nil when there is nothing to make (its output was delivered by an
    /// earlier run).
    func framePart(_ item: Item, context: StageContext) throws -> FramePart?
}

extension FramePassStage {
    /// Run alone, the stage is a pass of its own.
    func runAlone(_ item: Item, context: StageContext) throws -> StageOutcome {
        try FramePass.run([(self, context)], item: item)
        return .proceed
    }
}

extension FramePass {
    /// One pass for the consecutive frame stages `members` (each with its own context): their parts, in order, over
    /// the item's file, opened as the media stages open it.
    package static func run(_ members: [(stage: any FramePassStage, context: StageContext)], item: Item) throws {
        guard let (_, context) = members.first else { return }
        let parts = try members.compactMap { try $0.stage.framePart(item, context: $0.context) }
        try run(parts, item: item, context: context) { probe, stage in
            try MediaStageSupport.openInput(
                item.artifact, probe: probe, stage: stage, timeout: context.settings.probeTimeout)
        }
    }
}
