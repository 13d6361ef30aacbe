import Foundation
import IngestCore
import IngestMedia

/// The named outputs a recording gets beside its file (a poster, a thumbnail sheet, a proxy), kept in the item's
/// fact `outputs`: for each name, what `{{outputs.NAME.…}}` offers and where the file is in the work folder. The
/// file itself (`Item.artifact`) stays the main output; `upload: { output: NAME }` sends one of these instead.
package enum ItemOutputs {
    /// What `{{outputs.NAME.…}}` offers for every output; some add more (`time`, `tiles`, `duration`).
    package static let fields = [
        "name", "stem", "ext", "path", "size", "format", "width", "height", "time", "tiles", "columns", "duration",
    ]
    /// The stages that can add a named output with `output:`.
    package static let makers = ["poster", "thumbnails", "video", "audio", "jpeg"]

    /// Where the work file of stage `stage` for output `name` goes: the stage's work folder, the input's name with
    /// the output's extension (`…/3-poster/0-clips/clip.mov.jpg`).
    static func workPath(for item: Item, stage: String, fileExtension: String, context: StageContext) -> String {
        WorkFolder.outputPath(
            for: item, workDirectory: context.settings.workDirectory, stage: context.workFolderName(for: stage),
            fileExtension: fileExtension)
    }

    /// Records output `name`, written at `workPath`: its name and path as an upload stores them by default
    /// (`day1/clip.poster.jpg`), its size and `details`. The work file goes with the item's temp files.
    static func record(
        _ item: Item, name: String, workPath: String, format: String, details: JSONObject, stage: String
    ) {
        let ext = (workPath as NSString).pathExtension
        let stem = (item.fileName as NSString).deletingPathExtension + "." + name
        let folder = (item.relativePath as NSString).deletingLastPathComponent
        var object = details
        object["stage"] = .string(stage)
        object["name"] = .string(stem + "." + ext)
        object["stem"] = .string(stem)
        object["ext"] = .string(ext)
        object["path"] = .string(folder.isEmpty ? stem + "." + ext : folder + "/" + stem + "." + ext)
        object["format"] = .string(format)
        object["size"] = .int((try? FileManager.default.attributesOfItem(atPath: workPath)[.size] as? Int64) ?? 0)
        object["work_path"] = .string(workPath)
        set(item, name: name, .object(object))
        // A stage that kept the file as it was (already compliant) names the file itself: never a temp file.
        if workPath != item.path, !item.temporaryFiles.contains(workPath) { item.temporaryFiles.append(workPath) }
    }

    /// True when every upload of `name` was done by an earlier run (the journal says so): the output is then not
    /// made again, and what that run recorded of it stands in, marked `delivered_earlier`.
    static func deliveredEarlier(_ item: Item, name: String, context: StageContext) -> Bool {
        guard let recorded = context.deliveredOutputs[name] else { return false }
        var object: JSONObject = [:]
        if case .object(let earlier) = recorded { object = earlier }
        object["work_path"] = nil
        object["delivered_earlier"] = .bool(true)
        set(item, name: name, .object(object))
        return true
    }

    /// A media stage's ending with `output:`: the written file becomes output `name` (its probe gives the details)
    /// and the stage's fact is recorded; the item's artifact stays as it was.
    static func finishMedia(
        _ item: Item, name: String, path: String, probe after: ProbeResult?, fact: JSONObject, stage: String,
        context: StageContext
    ) {
        let format = (path as NSString).pathExtension.lowercased()
        record(item, name: name, workPath: path, format: format, details: details(of: after), stage: stage)
        var fact = fact
        fact["output"] = .string(name)
        item.facts[context.resultName ?? stage] = .object(fact)
    }

    /// Width, height and duration of a written media file, from its probe.
    static func details(of probe: ProbeResult?) -> JSONObject {
        var details: JSONObject = [:]
        if let (width, height) = probe?.dimensions {
            details["width"] = .int(Int64(width))
            details["height"] = .int(Int64(height))
        }
        if let duration = probe?.duration { details["duration"] = .double((duration * 1000).rounded() / 1000) }
        return details
    }

    /// The description of output `name`, nil when no stage made it.
    package static func description(of name: String, in item: Item) -> JSONObject? {
        guard case .object(let outputs)? = item.facts["outputs"], case .object(let output)? = outputs[name] else {
            return nil
        }
        return output
    }

    private static func set(_ item: Item, name: String, _ value: JSONValue) {
        var outputs: JSONObject = [:]
        if case .object(let existing)? = item.facts["outputs"] { outputs = existing }
        outputs[name] = value
        item.facts["outputs"] = .object(outputs)
    }
}

extension JSONValue {
    /// A whole number (`.int`, or a `.double` without a fraction), as output sizes and dimensions are.
    package var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value == value.rounded() && abs(value) < 9e15: return Int64(value)
        default: return nil
        }
    }
}
