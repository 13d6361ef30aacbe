import Foundation
import IngestNative

extension UploadStage {
    /// A `local` upload in a rehearsal: the destination is shown, nothing is copied.
    func rehearseCopy(_ item: Item, key: String, root: String, tap: RehearsalTap, context: StageContext) throws
        -> StageOutcome
    {
        let body = try? HTTPBody.file(item.artifact)
        let destination = (root as NSString).appendingPathComponent(key)
        _ = tap.answer(HTTPRequest(method: "COPY", url: destination, body: body), notes: ["key: \(key)"])
        if let name = context.resultName {
            item.facts[name] = .object([
                "path": .string(destination), "key": .string(key), "bytes": .int(body?.file?.size ?? 0),
            ])
        }
        return .proceed
    }
}
