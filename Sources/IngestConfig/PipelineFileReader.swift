import Foundation
import IngestCore
import NativeSystem

/// Reads a pipeline file's text, saying what is wrong in the user's terms: a folder or FIFO given in its place
/// (never opened, so a FIFO cannot block the run), or a byte that is not UTF-8 with its offset, line and column.
package enum PipelineFileReader {
    package static func read(path: String) throws(PipelineFileError) -> String {
        func failure(_ message: String, at location: SourceLocation? = nil) -> PipelineFileError {
            PipelineFileError(location: location, message: message)
        }
        let status: FileStatus
        do {
            status = try FileStatus(path: path, followLinks: true)
        } catch {
            let reason =
                error.errno == SystemError.tooManySymlinks
                ? "symlink loop (\(error.reason))" : error.reason
            var missing = failure("cannot read pipeline file \(path): \(reason)")
            if error.errno == SystemError.noSuchFile { missing.suggestion = PipelineFileReader.nearby(path) }
            throw missing
        }
        guard status.kind == .regular else {
            throw failure("\(path) is \(status.kindName), not a pipeline file; give the pipeline's YAML file")
        }
        let data: Data
        do {
            data = Data(try ReadOnlyFile(path: path).read(at: 0, count: Int(status.size)))
        } catch {
            throw failure("cannot read pipeline file \(path): \(error.reason)")
        }
        if let text = String(validating: data, as: UTF8.self) { return text }
        let bad = firstInvalidByte(in: data)
        throw failure(
            "the file is not UTF-8 text: byte 0x\(String(format: "%02X", bad.byte)) at offset \(bad.offset) "
                + "(line \(bad.line), column \(bad.column)) is not valid UTF-8; save the file as UTF-8",
            at: SourceLocation(file: path, line: bad.line, column: bad.column))
    }

    /// Where UTF-8 decoding first fails: the byte, its 0-based offset, and its 1-based line and column (columns
    /// count characters, as libyaml's do).
    static func firstInvalidByte(in data: Data) -> (byte: UInt8, offset: Int, line: Int, column: Int) {
        var iterator = data.makeIterator()
        var decoder = UTF8()
        var offset = 0
        var line = 1
        var column = 1
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
                if scalar == "\n" {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            case .emptyInput:
                return (0, offset, line, column)
            case .error:
                return (data[data.startIndex + offset], offset, line, column)
            }
        }
    }

    /// For a pipeline file that is not there: the same name with the other YAML extension (`preflight.yaml` given,
    /// `preflight.yml` there), else the closest `.yml`/`.yaml` name in its folder.
    static func nearby(_ path: String) -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let stem = (name as NSString).deletingPathExtension
        func inFolder(_ file: String) -> String { folder.isEmpty ? file : folder + "/" + file }
        for ext in ["yml", "yaml"] where inFolder(stem + "." + ext) != path {
            if FileManager.default.fileExists(atPath: inFolder(stem + "." + ext)) { return inFolder(stem + "." + ext) }
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? "." : folder)) ?? [])
            .filter { $0.hasSuffix(".yml") || $0.hasSuffix(".yaml") }
        return closestMatch(to: name, in: names).map(inFolder)
    }
}
