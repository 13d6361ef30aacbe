import Foundation
import IngestCore
import IngestTemplates

/// `upload: { output: NAME }`: sends a named output (a poster, a proxy) with the stage's method, as that method sends
/// the file. The method works on a view of the item whose artifact is the output's work file; what the upload adds
/// (its result, `uuid`, `date`) comes back to the item, and its result records which output it sent and its size, so
/// the journal keeps each output's delivery on its own.
extension UploadStage {
    func uploadOutput(_ name: String, of item: Item, context: StageContext) throws -> StageOutcome {
        guard let output = ItemOutputs.description(of: name, in: item), case .string(let path)? = output["work_path"]
        else {
            throw ItemFailed(
                stage: Self.name, rule: .output,
                message: "no output named '\(name)' was made for this file (an earlier stage with output: \(name))")
        }
        let view = Item(file: item.file)
        view.facts = item.facts
        view.templateValues = item.templateValues
        // Setting the artifact drops `sha256`/`md5`: in the view they describe the output.
        view.artifact = path
        let before = view.facts
        let outcome = try method.upload(
            view, scope: TemplateScope(item: view, context: context, stage: Self.name), context: context)
        for (key, value) in view.facts.pairs where before[key] != value { item.facts[key] = value }
        for (key, value) in view.templateValues.pairs where !["sha256", "md5"].contains(key) {
            item.templateValues[key] = value
        }
        let resultName = context.resultName ?? Self.name
        if case .object(var result)? = item.facts[resultName] {
            var sent = output
            sent["work_path"] = nil
            sent["output"] = .string(name)
            result["output"] = .object(sent)
            item.facts[resultName] = .object(result)
        }
        return outcome
    }
}
