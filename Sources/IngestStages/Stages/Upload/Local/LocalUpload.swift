import Foundation
import IngestCore
import IngestFiles
import IngestNetwork
import IngestTemplates
import NativeCurl
import NativeSystem

/// `method: local`: an atomic copy into `dir` under the rendered `key` (a temporary file renamed into place, never a
/// half-written file at the key); a key or a symlink that leads outside `dir` fails the file.
struct LocalUpload: UploadMethod {
    static let name = "local"
    static let summary = "copy into `dir`"

    struct Options: StageOptions, Sendable {
        var key: Template?
        var dir = ""
        var overwrite = true
        init() {}

        static var fields: [OptionField<Options>] {
            [
                UploadFields.key(\.key, doc: "Path under `dir`"),
                OptionField("dir", \.dir, doc: "Destination folder; nothing is written outside it.", required: true),
                OptionField("overwrite", \.overwrite, doc: "Replace an existing file at the key.", default: "true"),
            ]
        }
    }

    let key: Template
    let root: String
    let overwrite: Bool

    init(options: Options, stage: UploadStage.Options) throws {
        key = try options.key ?? stage.defaultKey()
        root = options.dir
        overwrite = options.overwrite
    }

    func upload(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome {
        let key = try scope.sanitizedKey(try self.key.render(scope))
        if let tap = context.rehearsal(for: item, stage: UploadStage.name, success: 200) {
            return try rehearse(item, key: key, root: root, tap: tap, context: context)
        }
        func fail(_ message: String) -> ItemFailed {
            ItemFailed(stage: UploadStage.name, rule: .local, message: message)
        }
        do {
            try FileSystem.makeFolders(root)
        } catch {
            throw fail("cannot create \(root): \(error)")
        }
        guard let resolvedRoot = AtomicCopy.resolved(root) else { throw fail("cannot resolve \(root)") }
        let destination = resolvedRoot + "/" + key
        let parent = (destination as NSString).deletingLastPathComponent
        do {
            try FileSystem.makeFolders(parent)
        } catch {
            throw fail("cannot create the folder for key '\(key)': \(error)")
        }
        // A symlink inside the destination must not lead the copy out of it.
        guard let resolvedParent = AtomicCopy.resolved(parent),
            resolvedParent == resolvedRoot || resolvedParent.hasPrefix(resolvedRoot + "/")
        else { throw fail("key '\(key)' leads outside \(root) (through a symlink)") }
        let finalPath = resolvedParent + "/" + (destination as NSString).lastPathComponent
        let identifies = UploadStage.hashesWhileSending(item, context: context)
        let observer = DigestObserver(sha256: false, identity: identifies, mode: identifies ? .inline : .countOnly)
        let bytes: Int64
        do {
            bytes = try AtomicCopy.copy(
                from: item.artifact, to: finalPath, replace: overwrite, observer: observer,
                expected: item.validatedArtifact.map(FileStatus.init))
        } catch {
            throw ItemFailed(
                stage: UploadStage.name,
                rule: { if case .changed = error { return .changed } else { return .local } }(),
                message: "copy to \(finalPath) failed: \(error)")
        }
        observer.store(on: item)
        if let name = context.resultName {
            item.facts[name] = .object(["path": .string(finalPath), "key": .string(key), "bytes": .int(bytes)])
        }
        return .proceed
    }

    /// A `local` upload in a rehearsal: the destination is shown, nothing is copied.
    private func rehearse(_ item: Item, key: String, root: String, tap: RehearsalTap, context: StageContext) throws
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
